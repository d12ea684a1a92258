package entra

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/internal/waitfor"
)

// authority is a fake Entra ID token endpoint for tenant "t1": it checks
// the form each grant must send and hands out numbered tokens.
type authority struct {
	*httptest.Server
	calls   atomic.Int32
	expires int // expires_in of the tokens
	hold    chan struct{}
	mu      sync.Mutex
	forms   []map[string]string
}

func newAuthority(t *testing.T) *authority {
	a := &authority{expires: 3600}
	a.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/t1/oauth2/v2.0/token" || r.ParseForm() != nil {
			http.Error(w, "no", http.StatusNotFound)
			return
		}
		form := map[string]string{}
		for k := range r.PostForm {
			form[k] = r.PostForm.Get(k)
		}
		a.mu.Lock()
		a.forms = append(a.forms, form)
		a.mu.Unlock()
		if a.hold != nil {
			<-a.hold
		}
		w.Header().Set("Content-Type", "application/json")
		if form["client_secret"] == "wrong" {
			w.WriteHeader(http.StatusUnauthorized)
			json.NewEncoder(w).Encode(map[string]any{"error": "invalid_client", "error_description": "AADSTS7000215: Invalid client secret provided.\nTrace ID: x"})
			return
		}
		n := a.calls.Add(1)
		json.NewEncoder(w).Encode(map[string]any{"token_type": "Bearer", "expires_in": a.expires, "access_token": "tok-" + string(rune('0'+n))})
	}))
	t.Cleanup(a.Close)
	return a
}

func env(m map[string]string) Env { return func(k string) string { return m[k] } }

func TestClientSecretCachedAndRefreshed(t *testing.T) {
	a := newAuthority(t)
	src, err := FromEnv(env(map[string]string{"AZURE_AUTHORITY_HOST": a.URL, "AZURE_TENANT_ID": "t1", "AZURE_CLIENT_ID": "app", "AZURE_CLIENT_SECRET": "s3cret"}), nil)
	if err != nil || src.Name() != "client secret" {
		t.Fatalf("source %v, %v", src, err)
	}
	c := NewCredential(src)
	now := time.Now()
	c.now = func() time.Time { return now }
	for range 3 {
		if tok, err := c.Token(t.Context()); err != nil || tok != "tok-1" {
			t.Fatalf("token %q, %v", tok, err)
		}
	}
	if n := a.calls.Load(); n != 1 {
		t.Errorf("%d token requests for three uses of one valid token", n)
	}
	f := a.forms[0]
	if f["grant_type"] != "client_credentials" || f["client_id"] != "app" || f["client_secret"] != "s3cret" || f["scope"] != Scope {
		t.Errorf("form %v", f)
	}
	// 56 minutes on, within 5 minutes of expiry: a new token.
	now = now.Add(56 * time.Minute)
	if tok, err := c.Token(t.Context()); err != nil || tok != "tok-2" {
		t.Errorf("after 56 min: token %q, %v; want a new one", tok, err)
	}
}

func TestOneFetchForManyCallers(t *testing.T) {
	a := newAuthority(t)
	a.hold = make(chan struct{})
	src, _ := FromEnv(env(map[string]string{"AZURE_AUTHORITY_HOST": a.URL, "AZURE_TENANT_ID": "t1", "AZURE_CLIENT_ID": "app", "AZURE_CLIENT_SECRET": "s"}), nil)
	c := NewCredential(src)
	var wg sync.WaitGroup
	got := make(chan string, 20)
	for range 20 {
		wg.Go(func() {
			tok, err := c.Token(t.Context())
			if err != nil {
				t.Error(err)
			}
			got <- tok
		})
	}
	// The first request is at the authority, held there: the others
	// wait for it.
	waitfor.True(t, "a token request", func() bool {
		a.mu.Lock()
		defer a.mu.Unlock()
		return len(a.forms) > 0
	})
	close(a.hold)
	wg.Wait()
	close(got)
	for tok := range got {
		if tok != "tok-1" {
			t.Errorf("a caller got %q", tok)
		}
	}
	if n := a.calls.Load(); n != 1 {
		t.Errorf("%d token requests for 20 callers at once", n)
	}
	// A caller that gives up does not wait.
	a.hold = make(chan struct{})
	defer close(a.hold)
	c.Invalidate()
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := c.Token(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled caller: %v", err)
	}
}

func TestRefusedSecretNamesTheProblemNotTheSecret(t *testing.T) {
	a := newAuthority(t)
	src, _ := FromEnv(env(map[string]string{"AZURE_AUTHORITY_HOST": a.URL, "AZURE_TENANT_ID": "t1", "AZURE_CLIENT_ID": "app", "AZURE_CLIENT_SECRET": "wrong"}), nil)
	_, err := NewCredential(src).Token(t.Context())
	if err == nil || !strings.Contains(err.Error(), "invalid_client") || !strings.Contains(err.Error(), "AADSTS7000215") || strings.Contains(err.Error(), "wrong") || strings.Contains(err.Error(), "Trace") {
		t.Errorf("error %v", err)
	}
}

func TestWorkloadIdentity(t *testing.T) {
	a := newAuthority(t)
	file := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(file, []byte("eyJfederated\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	src, err := FromEnv(env(map[string]string{"AZURE_AUTHORITY_HOST": a.URL, "AZURE_TENANT_ID": "t1", "AZURE_CLIENT_ID": "app", "AZURE_FEDERATED_TOKEN_FILE": file}), nil)
	if err != nil || src.Name() != "workload identity" {
		t.Fatalf("source %v, %v", src, err)
	}
	if tok, err := NewCredential(src).Token(t.Context()); err != nil || tok != "tok-1" {
		t.Fatalf("token %q, %v", tok, err)
	}
	f := a.forms[0]
	if f["client_assertion"] != "eyJfederated" || f["client_assertion_type"] != "urn:ietf:params:oauth:client-assertion-type:jwt-bearer" || f["client_secret"] != "" {
		t.Errorf("form %v", f)
	}
}

func TestManagedIdentity(t *testing.T) {
	expires := time.Now().Add(time.Hour).Unix()
	imds := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		if r.Header.Get("Metadata") != "true" || q.Get("resource") != "https://cognitiveservices.azure.com" || q.Get("client_id") != "uai" {
			http.Error(w, `{"error":"invalid_request"}`, http.StatusBadRequest)
			return
		}
		// The metadata service writes its numbers as strings.
		w.Write([]byte(`{"access_token":"mi-tok","expires_on":"` + jsonInt(expires) + `","expires_in":"3599","token_type":"Bearer"}`))
	}))
	t.Cleanup(imds.Close)
	src, err := FromEnv(env(map[string]string{"NANOBOT_AZURE_IMDS": imds.URL, "AZURE_CLIENT_ID": "uai"}), nil)
	if err != nil || src.Name() != "managed identity" {
		t.Fatalf("source %v, %v", src, err)
	}
	tok, err := src.Fetch(t.Context())
	if err != nil || tok.Value != "mi-tok" || tok.Expires.Unix() != expires {
		t.Errorf("token %+v, %v", tok, err)
	}
}

func jsonInt(n int64) string { b, _ := json.Marshal(n); return string(b) }

func TestAzureCLIAndNoSource(t *testing.T) {
	bin := t.TempDir()
	t.Setenv("PATH", bin)
	if _, err := FromEnv(env(nil), nil); !errors.Is(err, ErrNoSource) {
		t.Errorf("no credential anywhere: %v", err)
	}
	az := "#!/bin/sh\n[ \"$1 $2\" = \"account get-access-token\" ] || exit 2\necho '{\"accessToken\": \"cli-tok\", \"expires_on\": 4102444800, \"tokenType\": \"Bearer\"}'\n"
	if err := os.WriteFile(filepath.Join(bin, "az"), []byte(az), 0o755); err != nil {
		t.Fatal(err)
	}
	src, err := FromEnv(env(nil), nil)
	if err != nil || src.Name() != "Azure CLI" {
		t.Fatalf("source %v, %v", src, err)
	}
	tok, err := src.Fetch(t.Context())
	if err != nil || tok.Value != "cli-tok" || tok.Expires.Unix() != 4102444800 {
		t.Errorf("token %+v, %v", tok, err)
	}
}

func TestTransportSendsTheTokenAndDropsARefusedOne(t *testing.T) {
	a := newAuthority(t)
	src, _ := FromEnv(env(map[string]string{"AZURE_AUTHORITY_HOST": a.URL, "AZURE_TENANT_ID": "t1", "AZURE_CLIENT_ID": "app", "AZURE_CLIENT_SECRET": "s"}), nil)
	var seen []string
	var refuse atomic.Bool
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen = append(seen, r.Header.Get("Authorization"))
		if refuse.Load() {
			w.WriteHeader(http.StatusUnauthorized)
		}
	}))
	t.Cleanup(api.Close)
	hc := &http.Client{Transport: &Transport{Cred: NewCredential(src)}}
	for _, no := range []bool{false, true, false} {
		refuse.Store(no)
		resp, err := hc.Get(api.URL)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	want := []string{"Bearer tok-1", "Bearer tok-1", "Bearer tok-2"}
	if strings.Join(seen, ",") != strings.Join(want, ",") {
		t.Errorf("sent %q, want %q (a new token after a 401)", seen, want)
	}
}
