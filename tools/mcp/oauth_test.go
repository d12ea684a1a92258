package mcp

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/nanobot-go/nanobot/configs"
	"github.com/nanobot-go/nanobot/internal/waitfor"
	"github.com/nanobot-go/nanobot/tools"
)

// oauthFake is an authorization server (metadata, dynamic client
// registration, authorize with PKCE, token with refresh) and an MCP server
// (streamable HTTP, one tool) that requires its bearer tokens, announcing
// the authorization server in its protected resource metadata.
type oauthFake struct {
	srv       *httptest.Server
	expiresIn int // seconds, for issued access tokens

	mu         sync.Mutex
	clients    map[string][]string // client id -> redirect uris
	challenges map[string]string   // code -> PKCE challenge
	valid      map[string]bool     // access tokens accepted
	refresh    map[string]bool     // refresh tokens accepted
	issued     int
	seen       []string // tokens the MCP server accepted, in order
	problems   []string
}

func newOAuthFake(t *testing.T, expiresIn int) *oauthFake {
	f := &oauthFake{expiresIn: expiresIn, clients: map[string][]string{}, challenges: map[string]string{},
		valid: map[string]bool{}, refresh: map[string]bool{}}
	mux := http.NewServeMux()
	f.srv = httptest.NewServer(mux)
	t.Cleanup(f.srv.Close)
	base := f.srv.URL

	mux.HandleFunc("GET /.well-known/oauth-authorization-server", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 200, map[string]any{
			"issuer": base, "authorization_endpoint": base + "/authorize", "token_endpoint": base + "/token",
			"registration_endpoint": base + "/register", "response_types_supported": []string{"code"},
			"grant_types_supported": []string{"authorization_code", "refresh_token"}, "code_challenge_methods_supported": []string{"S256"},
			"token_endpoint_auth_methods_supported": []string{"none"}, "scopes_supported": []string{"mcp", "offline_access"},
		})
	})
	mux.HandleFunc("POST /register", func(w http.ResponseWriter, r *http.Request) {
		var md oauthex.ClientRegistrationMetadata
		if err := json.NewDecoder(r.Body).Decode(&md); err != nil || len(md.RedirectURIs) == 0 {
			f.problem("register: bad metadata")
			writeJSON(w, 400, map[string]any{"error": "invalid_client_metadata"})
			return
		}
		f.mu.Lock()
		id := "client-" + string(rune('a'+len(f.clients)))
		f.clients[id] = md.RedirectURIs
		f.mu.Unlock()
		writeJSON(w, 201, map[string]any{"client_id": id, "redirect_uris": md.RedirectURIs, "token_endpoint_auth_method": "none"})
	})
	mux.HandleFunc("GET /authorize", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		f.mu.Lock()
		uris := f.clients[q.Get("client_id")]
		f.mu.Unlock()
		if q.Get("response_type") != "code" || !slices.Contains(uris, q.Get("redirect_uri")) ||
			q.Get("code_challenge_method") != "S256" || q.Get("code_challenge") == "" || q.Get("state") == "" {
			f.problem("authorize: bad request " + r.URL.RawQuery)
			http.Error(w, "bad authorize request", 400)
			return
		}
		code := "code-" + q.Get("state")
		f.mu.Lock()
		f.challenges[code] = q.Get("code_challenge")
		f.mu.Unlock()
		// The user approves at once.
		http.Redirect(w, r, q.Get("redirect_uri")+"?code="+url.QueryEscape(code)+"&state="+url.QueryEscape(q.Get("state")), http.StatusFound)
	})
	mux.HandleFunc("POST /token", func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		f.mu.Lock()
		defer f.mu.Unlock()
		switch r.PostForm.Get("grant_type") {
		case "authorization_code":
			challenge, ok := f.challenges[r.PostForm.Get("code")]
			sum := sha256.Sum256([]byte(r.PostForm.Get("code_verifier")))
			if !ok || base64.RawURLEncoding.EncodeToString(sum[:]) != challenge {
				f.problems = append(f.problems, "token: bad code or PKCE verifier")
				writeJSON(w, 400, map[string]any{"error": "invalid_grant"})
				return
			}
			delete(f.challenges, r.PostForm.Get("code"))
		case "refresh_token":
			if !f.refresh[r.PostForm.Get("refresh_token")] {
				writeJSON(w, 400, map[string]any{"error": "invalid_grant"})
				return
			}
		default:
			writeJSON(w, 400, map[string]any{"error": "unsupported_grant_type"})
			return
		}
		f.issued++
		at, rt := "access-"+string(rune('0'+f.issued)), "refresh-"+string(rune('0'+f.issued))
		f.valid[at], f.refresh[rt] = true, true
		writeJSON(w, 200, map[string]any{"access_token": at, "token_type": "Bearer", "refresh_token": rt, "expires_in": f.expiresIn})
	})

	mcpServer := sdk.NewServer(&sdk.Implementation{Name: "oauth-fake", Version: "1"}, nil)
	sdk.AddTool(mcpServer, &sdk.Tool{Name: "whoami", Description: "says hello"}, func(ctx context.Context, req *sdk.CallToolRequest, _ struct{}) (*sdk.CallToolResult, any, error) {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "hello, signed-in user"}}}, nil, nil
	})
	verify := func(ctx context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
		f.mu.Lock()
		defer f.mu.Unlock()
		if !f.valid[token] {
			return nil, auth.ErrInvalidToken
		}
		f.seen = append(f.seen, token)
		return &auth.TokenInfo{Scopes: []string{"mcp"}, Expiration: time.Now().Add(time.Hour)}, nil
	}
	mcpHandler := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return mcpServer }, nil)
	mux.Handle("/mcp", auth.RequireBearerToken(verify, &auth.RequireBearerTokenOptions{ResourceMetadataURL: base + "/.well-known/oauth-protected-resource/mcp"})(mcpHandler))
	mux.Handle("/.well-known/oauth-protected-resource/mcp", auth.ProtectedResourceMetadataHandler(&oauthex.ProtectedResourceMetadata{
		Resource: base + "/mcp", AuthorizationServers: []string{base}, ScopesSupported: []string{"mcp"},
	}))
	return f
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func (f *oauthFake) problem(s string) {
	f.mu.Lock()
	f.problems = append(f.problems, s)
	f.mu.Unlock()
}

func (f *oauthFake) accepted() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.seen)
}

func (f *oauthFake) serverConfig() configs.MCPServerConfig {
	def := configs.MCPServerDefaults()
	return configs.MCPServerConfig{Type: "streamableHttp", URL: f.srv.URL + "/mcp", Auth: "oauth", ToolTimeout: def.ToolTimeout, EnabledTools: def.EnabledTools}
}

// browser follows the authorization URL the way a browser would: the fake
// approves and redirects to nanobot's loopback callback.
func browser(t *testing.T) func(string) error {
	return func(u string) error {
		go func() {
			res, err := http.Get(u)
			if err != nil {
				t.Errorf("browser: %v", err)
				return
			}
			res.Body.Close()
		}()
		return nil
	}
}

func TestOAuthLoginThenGatewayUsesAndRenewsTheToken(t *testing.T) {
	// Access tokens live 1 s: the oauth2 library renews tokens that expire
	// within 10 s, so the gateway's first use must refresh.
	f := newOAuthFake(t, 1)
	store := FileTokenStore{Path: filepath.Join(t.TempDir(), "state", "mcp-auth.json")}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	n, err := Login(ctx, "notes", f.serverConfig(), LoginOptions{Store: store, Open: browser(t)})
	if err != nil {
		t.Fatal(err)
	}
	if n != 1 {
		t.Errorf("login saw %d tools, want 1", n)
	}
	if f.problems != nil {
		t.Fatalf("the fake saw protocol problems: %q", f.problems)
	}
	st, err := os.Stat(store.Path)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("token file: %v, mode %v; want 0600", err, st.Mode().Perm())
	}
	cred, ok, err := store.Get("notes")
	if err != nil || !ok || cred.AccessToken != "access-1" || cred.RefreshToken != "refresh-1" || cred.ClientID != "client-a" || cred.ServerURL != f.srv.URL+"/mcp" {
		t.Fatalf("stored %+v %v %v", cred, ok, err)
	}

	var (
		secretsMu sync.Mutex
		secrets   []string
	)
	addSecret := func(s ...string) {
		secretsMu.Lock()
		secrets = append(secrets, s...)
		secretsMu.Unlock()
	}
	reg := tools.NewRegistry()
	m := New(map[string]configs.MCPServerConfig{"notes": f.serverConfig()}, reg, Options{OAuth: store, AddSecret: addSecret, BackoffMin: 20 * time.Millisecond, BackoffMax: 200 * time.Millisecond})
	m.Start(context.Background(), 20*time.Second)
	t.Cleanup(m.Close)
	res, err := reg.Execute(ctx, "mcp_notes_whoami", map[string]any{})
	if err != nil || !strings.Contains(res.Content, "hello, signed-in user") {
		t.Fatalf("tool call: %+v, %v", res, err)
	}
	seen := f.accepted()
	if len(seen) == 0 || slices.Contains(seen[len(seen)-1:], "access-1") {
		t.Errorf("the gateway used %q; want the renewed token, not the expiring access-1", seen)
	}
	cred, _, _ = store.Get("notes")
	if cred.AccessToken != seen[len(seen)-1] || cred.RefreshToken == "refresh-1" {
		t.Errorf("the renewed token was not stored: %+v", cred)
	}
	secretsMu.Lock()
	defer secretsMu.Unlock()
	for _, tok := range []string{"access-1", "refresh-1", cred.AccessToken, cred.RefreshToken} {
		if !slices.Contains(secrets, tok) {
			t.Errorf("token %s was not given to the redactor (got %q)", tok, secrets)
		}
	}
}

func TestOAuthWithoutSignInSaysHowToSignIn(t *testing.T) {
	f := newOAuthFake(t, 3600)
	reg := tools.NewRegistry()
	m := New(map[string]configs.MCPServerConfig{"notes": f.serverConfig()}, reg,
		Options{OAuth: FileTokenStore{Path: filepath.Join(t.TempDir(), "mcp-auth.json")}, BackoffMin: time.Hour, BackoffMax: time.Hour})
	m.Start(context.Background(), 5*time.Second)
	t.Cleanup(m.Close)
	var last string
	waitfor.True(t, "the server to fail", func() bool {
		for _, s := range m.Status() {
			last = s.LastError
			return s.State == StateFailed
		}
		return false
	})
	if !strings.Contains(last, "nanobot mcp login notes") {
		t.Errorf("error %q: want the command to sign in", last)
	}
	if len(f.accepted()) != 0 {
		t.Error("the server accepted a request without a sign-in")
	}
	if _, ok := reg.Get("mcp_notes_whoami"); ok {
		t.Error("tools registered without a sign-in")
	}
}

func TestOAuthConfigValidation(t *testing.T) {
	c := configs.Default()
	c.Tools.MCPServers = map[string]configs.MCPServerConfig{
		"a": {Type: "stdio", Command: "x", Auth: "oauth", ToolTimeout: 30},
		"b": {Type: "streamableHttp", URL: "https://x/mcp", Auth: "basic", ToolTimeout: 30},
	}
	var msgs []string
	for _, e := range c.Validate() {
		msgs = append(msgs, e.String())
	}
	all := strings.Join(msgs, "\n")
	if !strings.Contains(all, "tools.mcpServers.a.auth") || !strings.Contains(all, "tools.mcpServers.b.auth") {
		t.Errorf("validation: %s", all)
	}
}
