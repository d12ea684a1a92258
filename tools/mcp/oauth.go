package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"

	"github.com/nanobot-go/nanobot/configs"
	"github.com/nanobot-go/nanobot/internal/atomicfile"
)

// OAuth for remote MCP servers (tools.mcpServers.<name>.auth: "oauth").
//
// `nanobot mcp login <name>` runs Login: the go-sdk's authorization-code
// handler discovers the server's authorization server (protected resource
// metadata, then authorization server metadata), registers nanobot as a
// client (dynamic client registration), sends the user's browser to the
// authorization page with PKCE, receives the code on a loopback redirect
// and exchanges it. The client registration and the tokens are kept in a
// TokenStore (a 0600 file in the instance's state folder). The gateway
// then sends the stored access token with every request to that server,
// renewing it with the refresh token when it expires (the renewed token is
// stored again); when there is no stored sign-in, or the server refuses
// the token and no refresh helps, the server shows "failed" with the
// command to run.

// OAuthCredential is what a sign-in to one MCP server leaves behind.
type OAuthCredential struct {
	// ServerURL is the server the sign-in was for; a config pointing the
	// name elsewhere needs a new sign-in.
	ServerURL string `json:"serverUrl"`
	// The client nanobot registered as, and the authorization server's
	// token endpoint (for refreshes).
	ClientID     string `json:"clientId"`
	ClientSecret string `json:"clientSecret,omitempty"`
	TokenURL     string `json:"tokenUrl"`
	AuthStyle    int    `json:"authStyle,omitempty"`
	// The tokens.
	AccessToken  string    `json:"accessToken"`
	TokenType    string    `json:"tokenType,omitempty"`
	RefreshToken string    `json:"refreshToken,omitempty"`
	Expiry       time.Time `json:"expiry,omitzero"`
	SignedInAt   time.Time `json:"signedInAt,omitzero"`
}

func (c OAuthCredential) token() *oauth2.Token {
	return &oauth2.Token{AccessToken: c.AccessToken, TokenType: c.TokenType, RefreshToken: c.RefreshToken, Expiry: c.Expiry}
}

func (c OAuthCredential) config() *oauth2.Config {
	return &oauth2.Config{ClientID: c.ClientID, ClientSecret: c.ClientSecret,
		Endpoint: oauth2.Endpoint{TokenURL: c.TokenURL, AuthStyle: oauth2.AuthStyle(c.AuthStyle)}}
}

// TokenStore keeps OAuth credentials by server name. Implementations are
// safe for concurrent use, also across processes.
type TokenStore interface {
	Get(server string) (OAuthCredential, bool, error)
	Put(server string, c OAuthCredential) error
}

// FileTokenStore is a TokenStore in one JSON file (mode 0600, replaced
// atomically under a lock shared by every process of the instance).
type FileTokenStore struct{ Path string }

// Get reads one server's credential; a missing file is an empty store.
func (s FileTokenStore) Get(server string) (OAuthCredential, bool, error) {
	b, err := os.ReadFile(s.Path)
	if errors.Is(err, os.ErrNotExist) {
		return OAuthCredential{}, false, nil
	}
	if err != nil {
		return OAuthCredential{}, false, fmt.Errorf("mcp token store: %w", err)
	}
	all := map[string]OAuthCredential{}
	if err := json.Unmarshal(b, &all); err != nil {
		return OAuthCredential{}, false, fmt.Errorf("mcp token store %s is not valid JSON (delete it and run nanobot mcp login again): %w", s.Path, err)
	}
	c, ok := all[server]
	return c, ok, nil
}

// Put stores one server's credential, keeping the others.
func (s FileTokenStore) Put(server string, c OAuthCredential) error {
	err := atomicfile.Update(s.Path, 0o600, func(old []byte) ([]byte, error) {
		all := map[string]OAuthCredential{}
		if len(old) > 0 {
			if err := json.Unmarshal(old, &all); err != nil {
				return nil, fmt.Errorf("not valid JSON (delete it and sign in again): %w", err)
			}
		}
		all[server] = c
		return json.MarshalIndent(all, "", "  ")
	})
	if err != nil {
		return fmt.Errorf("mcp token store %s: %w", s.Path, err)
	}
	return nil
}

// ErrSignInNeeded: an OAuth server has no usable stored sign-in.
var ErrSignInNeeded = errors.New("OAuth sign-in needed")

// storedTokens is the token source of a signed-in server: the stored
// token, refreshed through the authorization server when it expires, and
// stored again after each refresh. Token is safe for concurrent use
// (oauth2.ReuseTokenSource single-flights the refresh).
type storedTokens struct {
	name   string
	store  TokenStore
	hc     *http.Client
	secret func(...string) // may be nil

	mu   sync.Mutex
	cred OAuthCredential
	src  oauth2.TokenSource
}

func newStoredTokens(name string, store TokenStore, hc *http.Client, cred OAuthCredential, secret func(...string)) *storedTokens {
	st := &storedTokens{name: name, store: store, hc: hc, cred: cred, secret: secret}
	if secret != nil {
		secret(cred.AccessToken, cred.RefreshToken, cred.ClientSecret)
	}
	ctx := context.WithValue(context.Background(), oauth2.HTTPClient, hc)
	st.src = oauth2.ReuseTokenSource(cred.token(), cred.config().TokenSource(ctx, cred.token()))
	return st
}

func (st *storedTokens) Token() (*oauth2.Token, error) {
	t, err := st.src.Token()
	if err != nil {
		return nil, fmt.Errorf("%w for MCP server %s (the stored token could not be renewed: run `nanobot mcp login %s`): %w", ErrSignInNeeded, st.name, st.name, err)
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if t.AccessToken != st.cred.AccessToken {
		if st.secret != nil {
			st.secret(t.AccessToken, t.RefreshToken)
		}
		st.cred.AccessToken, st.cred.TokenType, st.cred.Expiry = t.AccessToken, t.TokenType, t.Expiry
		if t.RefreshToken != "" {
			st.cred.RefreshToken = t.RefreshToken
		}
		if err := st.store.Put(st.name, st.cred); err != nil {
			return t, nil // the token works; a failed save is retried at the next renewal
		}
	}
	return t, nil
}

// oauthTransport sends the server's OAuth token with every request.
type oauthTransport struct {
	tokens oauth2.TokenSource
	next   http.RoundTripper
}

func (o oauthTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	t, err := o.tokens.Token()
	if err != nil {
		return nil, err
	}
	r = r.Clone(r.Context())
	t.SetAuthHeader(r)
	return o.next.RoundTrip(r)
}

// oauthClient is the HTTP client of an OAuth server: next plus the stored
// token, or an error saying how to sign in.
func (s *server) oauthClient(next http.RoundTripper) (*http.Client, error) {
	if s.m.opts.OAuth == nil {
		return nil, fmt.Errorf("%w: OAuth sign-ins are not available here", ErrSignInNeeded)
	}
	cred, ok, err := s.m.opts.OAuth.Get(s.name)
	if err != nil {
		return nil, err
	}
	if !ok || cred.AccessToken == "" {
		return nil, fmt.Errorf("%w: run `nanobot mcp login %s`", ErrSignInNeeded, s.name)
	}
	if cred.ServerURL != "" && cred.ServerURL != s.cfg.URL {
		return nil, fmt.Errorf("%w: the stored sign-in is for %s, the config says %s: run `nanobot mcp login %s`", ErrSignInNeeded, cred.ServerURL, s.cfg.URL, s.name)
	}
	tokens := newStoredTokens(s.name, s.m.opts.OAuth, &http.Client{Transport: next, Timeout: 30 * time.Second}, cred, s.m.opts.AddSecret)
	return &http.Client{Transport: oauthTransport{tokens: tokens, next: next}}, nil
}

// LoginOptions configure Login.
type LoginOptions struct {
	// Store receives the credential. Required.
	Store TokenStore
	// RedirectPort is the loopback port of the redirect
	// (http://127.0.0.1:PORT/auth/mcp/callback); 0 picks a free one.
	RedirectPort int
	// Open shows the authorization URL to the user (prints it, opens a
	// browser). Required.
	Open func(url string) error
	// HTTPClient makes the discovery, registration and token requests,
	// and the MCP connection; nil means a default client.
	HTTPClient *http.Client
}

// CallbackPath is the path of the loopback redirect.
const CallbackPath = "/auth/mcp/callback"

// Login signs in to the OAuth-protected HTTP server name (see the comment
// at the top of this file), stores the credential, and returns the number
// of tools the server offers with it.
func Login(ctx context.Context, name string, cfg configs.MCPServerConfig, opts LoginOptions) (int, error) {
	if cfg.URL == "" || cfg.Type == "stdio" {
		return 0, fmt.Errorf("mcp login %s: OAuth needs an HTTP server (url)", name)
	}
	if cfg.Type == "sse" {
		// The SDK's SSE transport has no OAuth hook for the discovery.
		return 0, fmt.Errorf("mcp login %s: the OAuth sign-in is for streamableHttp servers; this one is sse", name)
	}
	if opts.Store == nil || opts.Open == nil {
		return 0, errors.New("mcp login: Store and Open are required")
	}
	hc := opts.HTTPClient
	if hc == nil {
		hc = &http.Client{Timeout: 60 * time.Second}
	}
	redirect, results, stop, err := serveRedirect(opts.RedirectPort)
	if err != nil {
		return 0, fmt.Errorf("mcp login %s: listen for the redirect: %w", name, err)
	}
	defer stop()

	var (
		mu   sync.Mutex
		cred *OAuthCredential
	)
	handler, err := auth.NewAuthorizationCodeHandler(&auth.AuthorizationCodeHandlerConfig{
		DynamicClientRegistrationConfig: &auth.DynamicClientRegistrationConfig{Metadata: &oauthex.ClientRegistrationMetadata{
			RedirectURIs: []string{redirect}, ClientName: "nanobot", TokenEndpointAuthMethod: "none",
			GrantTypes: []string{"authorization_code", "refresh_token"}, ResponseTypes: []string{"code"},
		}},
		RedirectURL:         redirect,
		RequestRefreshToken: true,
		Client:              hc,
		AuthorizationCodeFetcher: func(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
			if err := opts.Open(args.URL); err != nil {
				return nil, err
			}
			select {
			case res := <-results:
				if res.Code == "" {
					return nil, errors.New("the authorization server returned no code (access denied?)")
				}
				return res, nil
			case <-ctx.Done():
				return nil, fmt.Errorf("waiting for the browser sign-in: %w", ctx.Err())
			}
		},
		NewTokenSource: func(ctx context.Context, c *oauth2.Config, t *oauth2.Token) (oauth2.TokenSource, error) {
			mu.Lock()
			cred = &OAuthCredential{ServerURL: cfg.URL, ClientID: c.ClientID, ClientSecret: c.ClientSecret,
				TokenURL: c.Endpoint.TokenURL, AuthStyle: int(c.Endpoint.AuthStyle),
				AccessToken: t.AccessToken, TokenType: t.TokenType, RefreshToken: t.RefreshToken, Expiry: t.Expiry,
				SignedInAt: time.Now().UTC()}
			mu.Unlock()
			return c.TokenSource(ctx, t), nil
		},
	})
	if err != nil {
		return 0, fmt.Errorf("mcp login %s: %w", name, err)
	}
	client := sdk.NewClient(&sdk.Implementation{Name: "nanobot", Version: "login"}, nil)
	var tr sdk.Transport = &sdk.StreamableClientTransport{Endpoint: cfg.URL, HTTPClient: hc, OAuthHandler: handler, MaxRetries: 1}
	sess, err := client.Connect(ctx, tr, nil)
	if err != nil {
		return 0, fmt.Errorf("mcp login %s: %w", name, err)
	}
	defer sess.Close()
	tools, err := listTools(ctx, sess)
	if err != nil {
		return 0, fmt.Errorf("mcp login %s: list tools: %w", name, err)
	}
	mu.Lock()
	got := cred
	mu.Unlock()
	if got == nil {
		return 0, fmt.Errorf("mcp login %s: the server let nanobot in without asking for a sign-in; remove auth: \"oauth\" from its config", name)
	}
	if err := opts.Store.Put(name, *got); err != nil {
		return 0, err
	}
	return len(tools), nil
}

// serveRedirect listens on 127.0.0.1:port (0 picks one) for the browser's
// return from the authorization server. It hands the first result over on
// results (an empty Code when the server reported an error); stop closes
// the listener.
func serveRedirect(port int) (redirect string, results <-chan *auth.AuthorizationResult, stop func(), err error) {
	l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		return "", nil, nil, err
	}
	redirect = fmt.Sprintf("http://127.0.0.1:%d%s", l.Addr().(*net.TCPAddr).Port, CallbackPath)
	ch := make(chan *auth.AuthorizationResult, 1)
	offer := func(res *auth.AuthorizationResult) {
		select {
		case ch <- res:
		default:
		}
	}
	// IdleTimeout lets a browser's kept-alive connection go while the
	// sign-in waits, instead of holding it until close.
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 30 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != CallbackPath {
			http.NotFound(w, r)
			return
		}
		q := r.URL.Query()
		if e := q.Get("error"); e != "" {
			http.Error(w, "Sign-in failed: "+html.EscapeString(e+" "+q.Get("error_description")), http.StatusBadRequest)
			offer(&auth.AuthorizationResult{})
			return
		}
		offer(&auth.AuthorizationResult{Code: q.Get("code"), State: q.Get("state"), Iss: q.Get("iss")})
		_, _ = fmt.Fprint(w, "nanobot is signed in to the MCP server. You can close this window.")
	})}
	go func() { _ = srv.Serve(l) }()
	return redirect, ch, func() { _ = srv.Close(); _ = l.Close() }, nil
}

// IsOAuth reports whether a server entry asks for OAuth.
func IsOAuth(cfg configs.MCPServerConfig) bool { return strings.EqualFold(cfg.Auth, "oauth") }
