package setup

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"go.uber.org/goleak"

	"github.com/nanobot-go/nanobot/providers"
)

// TestMain fails the package's tests if a goroutine outlives them.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fake answers one path when the header carries want, 401 otherwise, and
// counts the requests it saw.
func fake(t *testing.T, method, path, header, want, answer string) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		if r.Method != method || r.URL.EscapedPath() != path {
			http.NotFound(w, r)
			return
		}
		if r.Header.Get(header) != want {
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = w.Write([]byte(`{"ok":false,"error_code":401,"description":"Unauthorized","message":"401: Unauthorized"}`))
			return
		}
		_, _ = w.Write([]byte(answer))
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

func spec(t *testing.T, name string) providers.ProviderSpec {
	t.Helper()
	s, ok := providers.Lookup(name)
	if !ok {
		t.Fatalf("no provider %q", name)
	}
	return s
}

// Each check calls its service's cheapest proof with the credential where
// the service wants it, and says what the service answered; a refused
// credential is ErrRefused, and no error holds the credential.
func TestSetupChecks(t *testing.T) {
	ctx := context.Background()
	const key = "sk-right-key-0123456789abcdef"
	const wrong = "sk-wrong-key-0123456789abcdef"
	models := `{"object":"list","data":[{"id":"m1"},{"id":"m2"},{"id":"m3"}]}`

	oa, _ := fake(t, "GET", "/v1/models", "Authorization", "Bearer "+key, models)
	an, _ := fake(t, "GET", "/v1/models", "X-Api-Key", key, models)
	tg, _ := fake(t, "GET", "/bot123:tok/getMe", "Accept-Encoding", "gzip", `{"ok":true,"result":{"id":1,"is_bot":true,"username":"setup_bot"}}`)
	sl, _ := fake(t, "POST", "/api/auth.test", "Authorization", "Bearer xoxb-right", `{"ok":true,"team":"Acme","user":"bot"}`)
	dc, _ := fake(t, "GET", "/api/v10/users/@me", "Authorization", "Bot dc-right", `{"id":"1","username":"nanobot","bot":true}`)
	c := New()

	type check func(secret string) (string, error)
	for _, tc := range []struct {
		name          string
		run           check
		right, wrong  string
		want, refused string
	}{
		{"openai-compatible", func(s string) (string, error) {
			ids, err := c.Provider(ctx, spec(t, "vllm"), oa.URL+"/v1/", s)
			return strings.Join(ids, ","), err
		}, key, wrong, "m1,m2,m3", "the key was refused (HTTP 401)"},
		{"anthropic", func(s string) (string, error) {
			ids, err := c.Provider(ctx, spec(t, "anthropic"), an.URL, s)
			return strings.Join(ids, ","), err
		}, key, wrong, "m1,m2,m3", "the key was refused (HTTP 401)"},
		{"telegram", func(s string) (string, error) { return c.Telegram(ctx, tg.URL, s) }, "123:tok", "123:bad", "setup_bot", "HTTP 404"},
		{"slack", func(s string) (string, error) { return c.Slack(ctx, sl.URL+"/api/", s) }, "xoxb-right", "xoxb-wrong", "Acme", "the token was refused (HTTP 401)"},
		{"discord", func(s string) (string, error) { return c.Discord(ctx, dc.URL, s) }, "dc-right", "dc-wrong", "nanobot", "the token was refused (HTTP 401)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.run(tc.right)
			if err != nil || got != tc.want {
				t.Fatalf("the right credential: got %q, %v; want %q", got, err, tc.want)
			}
			_, err = tc.run(tc.wrong)
			if err == nil || !strings.Contains(err.Error(), tc.refused) {
				t.Fatalf("the wrong credential: got %v, want %q", err, tc.refused)
			}
			if strings.Contains(err.Error(), tc.wrong) {
				t.Errorf("the error holds the credential: %v", err)
			}
		})
	}
}

// A Slack token Slack does not take comes back as HTTP 200 with ok:
// false; that is a refusal too.
func TestSetupSlackSaysInvalidAuth(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(`{"ok":false,"error":"invalid_auth"}`))
	}))
	defer srv.Close()
	_, err := New().Slack(context.Background(), srv.URL+"/api/", "xoxb-whatever")
	if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "invalid_auth") {
		t.Errorf("got %v, want a refusal naming invalid_auth", err)
	}
}

// A service that answers with the key in its error (some do, in full or
// in part) does not get it into the check's error; nor does a transport
// error, whose URL holds Telegram's token.
func TestSetupErrorsHoldNoSecret(t *testing.T) {
	const key = "sk-echoed-0123456789abcdefghij"
	echo := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusBadRequest)
		_, _ = w.Write([]byte(`{"error":"Incorrect API key provided: ` + r.Header.Get("Authorization") + `"}`))
	}))
	defer echo.Close()
	_, err := New().Provider(context.Background(), spec(t, "openai"), echo.URL, key)
	if err == nil || strings.Contains(err.Error(), key) || !strings.Contains(err.Error(), "HTTP 400") {
		t.Errorf("got %v, want HTTP 400 without the key", err)
	}

	closed := httptest.NewServer(http.NotFoundHandler())
	base := closed.URL
	closed.Close()
	const token = "987654321:AAH-secret-telegram-token-abcdefghijk"
	_, err = New().Telegram(context.Background(), base, token)
	if err == nil || !strings.Contains(err.Error(), "cannot reach") || strings.Contains(err.Error(), "AAH-secret") {
		t.Errorf("got %v, want cannot reach without the token", err)
	}
}

// A redirect to another host is not followed: the key, in a header, is
// not sent on. A redirect on the same host is.
func TestSetupRedirectsStayOnTheHost(t *testing.T) {
	const key = "sk-redirected-0123456789abcdef"
	var leaked atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Api-Key") != "" || r.Header.Get("Authorization") != "" {
			leaked.Add(1)
		}
		_, _ = w.Write([]byte(`{"data":[]}`))
	}))
	defer other.Close()
	var self *httptest.Server
	self = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/away/v1/models":
			http.Redirect(w, r, other.URL+"/v1/models", http.StatusFound)
		case "/moved/v1/models":
			http.Redirect(w, r, self.URL+"/v1/models", http.StatusMovedPermanently)
		case "/v1/models":
			_, _ = w.Write([]byte(`{"data":[{"id":"a"}]}`))
		}
	}))
	defer self.Close()
	c := New()
	_, err := c.Provider(context.Background(), spec(t, "anthropic"), self.URL+"/away", key)
	if err == nil || !strings.Contains(err.Error(), "not followed") {
		t.Errorf("a redirect to another host: got %v, want it not followed", err)
	}
	if leaked.Load() != 0 {
		t.Error("the key was sent to the other host")
	}
	if ids, err := c.Provider(context.Background(), spec(t, "anthropic"), self.URL+"/moved", key); err != nil || len(ids) != 1 {
		t.Errorf("a redirect on the same host: models %q, %v; want 1", ids, err)
	}
}

// Services without a models call are not checked, and say so.
func TestSetupNotChecked(t *testing.T) {
	for _, name := range []string{"bedrock", "azure_openai", "github-copilot"} {
		if _, err := New().Provider(context.Background(), spec(t, name), "http://127.0.0.1:1", "k"); !errors.Is(err, ErrNotChecked) {
			t.Errorf("%s: got %v, want ErrNotChecked", name, err)
		}
	}
}

// The checker's own bases stand in for the public APIs when a check names
// none (tests, a self-hosted Bot API server).
func TestSetupDefaultBases(t *testing.T) {
	tg, _ := fake(t, "GET", "/bot1:x/getMe", "Accept-Encoding", "gzip", `{"ok":true,"result":{"username":"b"}}`)
	dc, _ := fake(t, "GET", "/api/v10/users/@me", "Authorization", "Bot d", `{"username":"d","bot":true}`)
	sl, _ := fake(t, "POST", "/x/auth.test", "Authorization", "Bearer xoxb-s", `{"ok":true,"team":"s"}`)
	c := New()
	c.TelegramBase, c.DiscordBase, c.SlackBase = tg.URL, dc.URL, sl.URL+"/x"
	ctx := context.Background()
	if got, err := c.Telegram(ctx, "", "1:x"); err != nil || got != "b" {
		t.Errorf("telegram: %q %v", got, err)
	}
	if got, err := c.Discord(ctx, "", "d"); err != nil || got != "d" {
		t.Errorf("discord: %q %v", got, err)
	}
	if got, err := c.Slack(ctx, "", "xoxb-s"); err != nil || got != "s" {
		t.Errorf("slack: %q %v", got, err)
	}
	if _, err := c.Discord(ctx, "", "Bot d"); err == nil || !strings.Contains(err.Error(), "prefix") {
		t.Errorf(`a "Bot " prefix: %v`, err)
	}
}

// TestSetupCheckOfAServiceThatNeverAnswers: a check ends when its context
// does (the workbench's request went away, or a deadline), says the
// service could not be reached, holds no secret and leaves nothing
// running (goleak in TestMain).
func TestSetupCheckOfAServiceThatNeverAnswers(t *testing.T) {
	arrived := make(chan struct{}, 4)
	release := make(chan struct{})
	silent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer silent.Close()
	defer close(release)
	const token = "987654321:AAH-hanging-telegram-token-abcdefghi"
	for _, check := range []func(context.Context) error{
		func(ctx context.Context) error { _, err := New().Telegram(ctx, silent.URL, token); return err },
		func(ctx context.Context) error {
			_, err := New().Provider(ctx, spec(t, "openai"), silent.URL, token)
			return err
		},
	} {
		ctx, cancel := context.WithCancel(context.Background())
		errc := make(chan error, 1)
		go func() { errc <- check(ctx) }()
		<-arrived // the request is at the server, which will not answer
		cancel()
		err := <-errc
		if err == nil || !strings.Contains(err.Error(), "cannot reach") || strings.Contains(err.Error(), "AAH-hanging") {
			t.Errorf("got %v, want cannot reach without the token", err)
		}
	}
}
