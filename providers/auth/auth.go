// Package auth signs nanobot in to subscription LLM services — GitHub
// Copilot (OAuth device flow, then the short-lived Copilot token), OpenAI
// Codex (ChatGPT sign-in: OAuth authorization code with PKCE on a loopback
// redirect, or the device-code flow on headless machines) and xAI Grok
// (OpenID Connect discovery, then the authorization code with PKCE on a
// loopback redirect, or a pasted callback address) — keeps the
// credentials in a 0600 token file, renews them before they expire, and
// adds them to every request of the provider's backend as an HTTP
// transport (Manager.Client, plugged in as providers.Options.SignIn).
//
// Errors: a missing, revoked or expired sign-in is a *providers.SignInError
// naming the command to run; the agent turns it into one reply. Network
// failures and 5xx during a renewal are transient *providers.Error values.
//
// Secrets: every token loaded or obtained is added to the Redactor before
// it is used, and no error or log line carries one.
//
// Concurrency: a Manager is safe for concurrent use. Renewal is
// single-flight per provider within the process, and serialised across
// processes by the token file's lock: twenty calls that find the token
// expired cause one renewal, and the others wait for its result (each
// until its own ctx ends).
package auth

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/nanobot-go/nanobot/internal/redact"
	"github.com/nanobot-go/nanobot/providers"
)

// Provider names, as in the provider registry.
const (
	Copilot = "github-copilot"
	Codex   = "openai-codex"
	XAIGrok = "xai-grok"
)

// Names lists the sign-in providers.
func Names() []string { return []string{Copilot, Codex, XAIGrok} }

// Canonical maps a user's spelling ("copilot", "codex", "GitHub-Copilot")
// to a provider name.
func Canonical(name string) (string, bool) {
	n := strings.ToLower(strings.TrimSpace(name))
	n = strings.ReplaceAll(n, "_", "-")
	switch n {
	case Copilot, "copilot", "github":
		return Copilot, true
	case Codex, "codex", "chatgpt":
		return Codex, true
	case XAIGrok, "xaigrok", "xai", "grok":
		return XAIGrok, true
	}
	return "", false
}

// Endpoints are the service addresses of one sign-in provider. Empty
// fields take the defaults; tests point them at local fakes.
type Endpoints struct {
	// AuthBase is the authorization server: https://github.com,
	// https://auth.openai.com, or for xai-grok the OpenID Connect issuer
	// https://auth.x.ai (its discovery document names the rest).
	AuthBase string
	// ExchangeBase is where the GitHub token is exchanged for the Copilot
	// token: https://api.github.com (github-copilot only).
	ExchangeBase string
	// ClientID is the public OAuth client id.
	ClientID string
	// RedirectPort is the loopback port of the PKCE redirect (openai-codex:
	// default 1455, the port registered for the public client; xai-grok:
	// default a free port). -1 picks a free port (tests).
	RedirectPort int
}

// Defaults of the public clients.
const (
	DefaultCopilotAuthBase     = "https://github.com"
	DefaultCopilotExchangeBase = "https://api.github.com"
	// DefaultCopilotClientID is the public client id editors use for the
	// Copilot device flow.
	DefaultCopilotClientID = "Iv1.b507a08c87ecfe98"
	DefaultCodexAuthBase   = "https://auth.openai.com"
	DefaultCodexClientID   = "app_EMoamEEZ73f0CkXaXp7hrann"
	DefaultCodexPort       = 1455
	DefaultXAIIssuer       = "https://auth.x.ai"
	// DefaultXAIClientID is the public client of xAI's Grok CLI sign-in,
	// which the Python nanobot uses too.
	DefaultXAIClientID = "b1a00492-073a-47ea-816f-4c329264a828"
)

func (e Endpoints) withDefaults(provider string) Endpoints {
	def := func(p *string, v string) {
		if *p == "" {
			*p = v
		}
		*p = strings.TrimRight(*p, "/")
	}
	switch provider {
	case Copilot:
		def(&e.AuthBase, DefaultCopilotAuthBase)
		def(&e.ExchangeBase, DefaultCopilotExchangeBase)
		def(&e.ClientID, DefaultCopilotClientID)
	case Codex:
		def(&e.AuthBase, DefaultCodexAuthBase)
		def(&e.ClientID, DefaultCodexClientID)
		if e.RedirectPort == 0 {
			e.RedirectPort = DefaultCodexPort
		}
	case XAIGrok:
		def(&e.AuthBase, DefaultXAIIssuer)
		def(&e.ClientID, DefaultXAIClientID)
	}
	return e
}

// Default margins: a token is renewed this long before it expires, so a
// slow clock or a long request does not meet an expired token.
const (
	DefaultMargin = 2 * time.Minute
	// XAIMargin is xai-grok's: the Python nanobot renews xAI tokens 5
	// minutes ahead, and so does this one unless Options.Margin is set.
	XAIMargin = 5 * time.Minute
)

// Options configures a Manager.
type Options struct {
	// Store is the token file. Required.
	Store *Store
	// Endpoints per provider name; missing entries take the defaults.
	Endpoints map[string]Endpoints
	// HTTPClient talks to the authorization servers; nil means a client
	// with a 30 s timeout.
	HTTPClient *http.Client
	// Redact learns every token loaded or obtained; nil redacts nothing.
	Redact *redact.Redactor
	// Logger gets debug and info lines (never tokens); nil discards.
	Logger *slog.Logger
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Margin renews a token this long before its expiry; 0 means
	// DefaultMargin (XAIMargin for xai-grok), negative none.
	Margin time.Duration
	// Wait sleeps between device-flow polls; nil means a timer that ends
	// early with ctx. Tests inject one that records the intervals.
	Wait func(ctx context.Context, d time.Duration) error
	// RenewTimeout bounds one renewal shared by many callers; 0 means 60 s.
	RenewTimeout time.Duration
}

// Manager signs in, stores, renews and applies the credentials of the
// sign-in providers.
type Manager struct {
	opts Options
	log  *slog.Logger
	hc   *http.Client
	sf   singleflight.Group
	// defaultMargin: Options.Margin was left 0, so each provider gets its
	// own default.
	defaultMargin bool

	mu sync.Mutex
	// cache holds the credential last loaded or renewed per provider;
	// rejected the access token a service refused (401), which must not be
	// used again even when its expiry says it is fine.
	cache    map[string]Credential
	rejected map[string]string
}

// New returns a Manager. It does no IO.
func New(opts Options) *Manager {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	defaultMargin := opts.Margin == 0
	if opts.Margin == 0 {
		opts.Margin = DefaultMargin
	} else if opts.Margin < 0 {
		opts.Margin = 0
	}
	if opts.Wait == nil {
		opts.Wait = providers.Sleep
	}
	if opts.RenewTimeout <= 0 {
		opts.RenewTimeout = 60 * time.Second
	}
	hc := opts.HTTPClient
	if hc == nil {
		hc = &http.Client{Timeout: 30 * time.Second}
	}
	return &Manager{
		opts: opts, log: opts.Logger.With("component", "auth"), hc: hc, defaultMargin: defaultMargin,
		cache: map[string]Credential{}, rejected: map[string]string{},
	}
}

func (m *Manager) endpoints(provider string) Endpoints {
	return m.opts.Endpoints[provider].withDefaults(provider)
}

// Store is the token file.
func (m *Manager) Store() *Store { return m.opts.Store }

// usable reports whether c can be sent now: present, not refused, and not
// within the margin of its expiry.
func (m *Manager) usable(provider string, c Credential) bool {
	if c.AccessToken == "" || m.rejected[provider] == c.AccessToken {
		return false
	}
	return c.ExpiresAt.IsZero() || m.opts.Now().Add(m.margin(provider)).Before(c.ExpiresAt)
}

// margin is how long before its expiry provider's token is renewed.
func (m *Manager) margin(provider string) time.Duration {
	if m.defaultMargin && provider == XAIGrok {
		return XAIMargin
	}
	return m.opts.Margin
}

// Token returns a usable credential for provider, renewing it first when
// it expires within the margin (or was refused). Concurrent callers share
// one renewal.
func (m *Manager) Token(ctx context.Context, provider string) (Credential, error) {
	m.mu.Lock()
	c, cached := m.cache[provider]
	ok := cached && m.usable(provider, c)
	m.mu.Unlock()
	if ok {
		return c, nil
	}
	if !cached {
		stored, found, err := m.opts.Store.Get(provider)
		if err != nil {
			return Credential{}, err
		}
		if !found {
			return Credential{}, &providers.SignInError{Provider: provider, Reason: "not signed in"}
		}
		m.opts.Redact.Add(stored.secrets()...)
		m.mu.Lock()
		if _, raced := m.cache[provider]; !raced {
			m.cache[provider] = stored
		}
		c = m.cache[provider]
		ok = m.usable(provider, c)
		m.mu.Unlock()
		if ok {
			return c, nil
		}
	}
	ch := m.sf.DoChan(provider, func() (any, error) {
		// The renewal outlives a caller that gives up: the others still
		// wait for it.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), m.opts.RenewTimeout)
		defer cancel()
		return m.renew(rctx, provider)
	})
	select {
	case r := <-ch:
		if r.Err != nil {
			return Credential{}, r.Err
		}
		return r.Val.(Credential), nil
	case <-ctx.Done():
		return Credential{}, providers.Canceled(provider, ctx.Err())
	}
}

// renew renews provider's credential under the token file's lock. Another
// process (or an earlier renewal) may have stored a usable one meanwhile:
// then that one is adopted and the service is not asked.
func (m *Manager) renew(ctx context.Context, provider string) (Credential, error) {
	var out Credential
	err := m.opts.Store.update(func(all map[string]Credential) error {
		cur, ok := all[provider]
		if !ok {
			return &providers.SignInError{Provider: provider, Reason: "signed out"}
		}
		m.opts.Redact.Add(cur.secrets()...)
		m.mu.Lock()
		fresh := m.usable(provider, cur)
		m.mu.Unlock()
		if fresh {
			out = cur
			return nil
		}
		next, err := m.refresh(ctx, provider, cur)
		if err != nil {
			return err
		}
		next.RefreshedAt = m.opts.Now()
		m.opts.Redact.Add(next.secrets()...)
		all[provider] = next
		out = next
		return nil
	})
	if err != nil {
		var se *providers.SignInError
		var pe *providers.Error
		// The caller reports the failure (the agent logs the turn), so it
		// is returned, not logged; the token store's path prefix is dropped.
		if errors.As(err, &se) {
			m.log.Debug("sign-in renewal failed", "provider", provider, "reason", se.Reason)
			return Credential{}, se
		}
		if errors.As(err, &pe) {
			return Credential{}, pe
		}
		return Credential{}, fmt.Errorf("%s: renew sign-in: %w", provider, err)
	}
	m.mu.Lock()
	m.cache[provider] = out
	m.mu.Unlock()
	m.log.Debug("sign-in renewed", "provider", provider, "expires_at", out.ExpiresAt)
	return out, nil
}

func (m *Manager) refresh(ctx context.Context, provider string, cur Credential) (Credential, error) {
	switch provider {
	case Copilot:
		return m.copilotExchange(ctx, cur)
	case Codex:
		return m.codexRefresh(ctx, cur)
	case XAIGrok:
		return m.xaiRefresh(ctx, cur)
	}
	return Credential{}, fmt.Errorf("auth: unknown sign-in provider %q", provider)
}

// Invalidate marks an access token the service refused, so the next Token
// renews even if the expiry says the token is fine.
func (m *Manager) Invalidate(provider, accessToken string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.rejected[provider] = accessToken
}

// save stores a new sign-in and makes it current.
func (m *Manager) save(provider string, c Credential) error {
	m.opts.Redact.Add(c.secrets()...)
	if c.SignedInAt.IsZero() {
		c.SignedInAt = m.opts.Now()
	}
	if err := m.opts.Store.Put(provider, c); err != nil {
		return err
	}
	m.mu.Lock()
	m.cache[provider] = c
	delete(m.rejected, provider)
	m.mu.Unlock()
	return nil
}

// Logout forgets provider's credentials and reports whether there were
// any. The service keeps the grant until it is revoked there (see
// docs/providers.md).
func (m *Manager) Logout(provider string) (bool, error) {
	found, err := m.opts.Store.Delete(provider)
	m.mu.Lock()
	delete(m.cache, provider)
	m.mu.Unlock()
	return found, err
}

// Status is one stored sign-in, for nanobot status.
type Status struct {
	Provider   string
	SignedInAt time.Time
	// ExpiresAt is the access token's expiry (zero: unknown).
	ExpiresAt time.Time
	// Renewable: a refresh credential is stored, so an expired access
	// token is renewed on the next call.
	Renewable bool
	AccountID string
}

// Statuses lists the stored sign-ins by provider name.
func (m *Manager) Statuses() ([]Status, error) {
	all, err := m.opts.Store.Load()
	if err != nil {
		return nil, err
	}
	out := make([]Status, 0, len(all))
	for name, c := range all {
		out = append(out, Status{Provider: name, SignedInAt: c.SignedInAt, ExpiresAt: c.ExpiresAt, Renewable: c.RefreshToken != "", AccountID: c.AccountID})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Provider < out[j].Provider })
	return out, nil
}
