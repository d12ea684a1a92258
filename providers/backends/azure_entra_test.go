package backends_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/nanobot-go/nanobot/providers"
	"github.com/nanobot-go/nanobot/providers/providertest"
)

// TestAzureWithoutAKeySignsInWithEntraID: azure_openai with an apiBase and
// no apiKey resolves, fetches a token from Entra ID (a service principal
// from the environment, against a local fake authority) and sends it as a
// bearer token, with no api-key header.
func TestAzureWithoutAKeySignsInWithEntraID(t *testing.T) {
	var tokens int
	authority := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/tenant-1/oauth2/v2.0/token" || r.FormValue("client_secret") != "sp-secret" || r.FormValue("scope") != "https://cognitiveservices.azure.com/.default" {
			http.Error(w, `{"error":"invalid_request"}`, http.StatusBadRequest)
			return
		}
		tokens++
		json.NewEncoder(w).Encode(map[string]any{"access_token": "entra-token", "expires_in": 3600, "token_type": "Bearer"})
	}))
	t.Cleanup(authority.Close)
	for k, v := range map[string]string{"AZURE_AUTHORITY_HOST": authority.URL, "AZURE_TENANT_ID": "tenant-1", "AZURE_CLIENT_ID": "app-1", "AZURE_CLIENT_SECRET": "sp-secret"} {
		t.Setenv(k, v)
	}
	srv := providertest.New(t)
	res, err := providers.Resolve("gpt-4o-deploy", "azure_openai", map[string]providers.Settings{"azureOpenai": {APIBase: srv.URL}})
	if err != nil {
		t.Fatal(err)
	}
	opts := options(srv)
	opts.HTTPClient = nil // Azure's own client (plain HTTP only to loopback)
	p, err := providers.New(res, opts)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		srv.Push(providertest.Reply{Text: "hello"})
		if _, err := p.Chat(t.Context(), providers.ChatRequest{Messages: []providers.Message{{Role: "user", Content: "hi"}}}); err != nil {
			t.Fatal(err)
		}
	}
	for _, r := range srv.Requests() {
		if r.Header.Get("Authorization") != "Bearer entra-token" || r.Header.Get("Api-Key") != "" || r.Path != "/openai/deployments/gpt-4o-deploy/chat/completions" {
			t.Errorf("request %s with authorization %q, api-key %q", r.Path, r.Header.Get("Authorization"), r.Header.Get("Api-Key"))
		}
	}
	if tokens != 1 {
		t.Errorf("%d token requests for two calls", tokens)
	}
}
