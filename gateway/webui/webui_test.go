package webui

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/nanobot-go/nanobot/agent/session"
	"github.com/nanobot-go/nanobot/internal/owner"
	"github.com/nanobot-go/nanobot/providers"
)

const testPassword = "correct horse battery"

// fakeClock is a clock tests move by hand.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

type bench struct {
	t      *testing.T
	server *Server
	srv    *httptest.Server
	hc     *http.Client
	store  *session.FileStore
	clock  *fakeClock
	hash   string
	owner  *owner.Key
	// bodies are every response body, for the secrets check.
	mu     sync.Mutex
	bodies []string
}

func newBench(t *testing.T, loopback bool, withPassword bool, tweak ...func(*Options)) *bench {
	t.Helper()
	st, err := session.NewFileStore(t.TempDir(), session.FileStoreOptions{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	b := &bench{t: t, store: st, clock: &fakeClock{t: time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)}}
	if withPassword {
		h, err := bcrypt.GenerateFromPassword([]byte(testPassword), bcrypt.MinCost)
		if err != nil {
			t.Fatal(err)
		}
		b.hash = string(h)
	}
	b.owner = owner.New(randomToken())
	b.owner.SetClock(b.clock.Now)
	o := Options{PasswordHash: b.hash, Loopback: loopback, Owner: b.owner, Sessions: st, Now: b.clock.Now}
	for _, f := range tweak {
		f(&o)
	}
	s, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	s.Mount(mux)
	b.server = s
	b.srv = httptest.NewServer(mux)
	t.Cleanup(b.srv.Close)
	jar, _ := cookiejar.New(nil)
	b.hc = &http.Client{Jar: jar}
	t.Cleanup(b.noSecrets)
	if loopback {
		// The owner's browser, signed in by the link the gateway printed.
		if code, body, _ := b.signIn(b.owner.LoginCode(time.Minute)); code != 200 {
			t.Fatalf("sign in with a code: %d %v", code, body)
		}
	}
	return b
}

// signIn posts a one-time sign-in code, as the page does for a link.
func (b *bench) signIn(code string) (int, map[string]any, *http.Response) {
	c, _ := json.Marshal(map[string]string{"code": code})
	return b.do("POST", "/api/login", string(c), map[string]string{"Content-Type": "application/json"})
}

// stranger is a client with no login: another user of the machine, or a
// command the agent runs.
func (b *bench) stranger() *bench {
	jar, _ := cookiejar.New(nil)
	return &bench{t: b.t, server: b.server, srv: b.srv, hc: &http.Client{Jar: jar}, store: b.store, clock: b.clock, hash: b.hash, owner: b.owner}
}

// do sends a request and returns the status and decoded JSON body.
func (b *bench) do(method, path, body string, hdr map[string]string) (int, map[string]any, *http.Response) {
	b.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, b.srv.URL+path, rd)
	if err != nil {
		b.t.Fatal(err)
	}
	for k, v := range hdr {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := b.hc.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	b.mu.Lock()
	b.bodies = append(b.bodies, string(raw)+strings.Join(resp.Header.Values("Set-Cookie"), ";"))
	b.mu.Unlock()
	var out map[string]any
	_ = json.Unmarshal(raw, &out)
	return resp.StatusCode, out, resp
}

// noSecrets fails when any response carried the password or its hash.
func (b *bench) noSecrets() {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, body := range b.bodies {
		if strings.Contains(body, testPassword) || (b.hash != "" && strings.Contains(body, b.hash)) || strings.Contains(body, "$2a$") {
			b.t.Errorf("a response carries the password or its hash: %.200s", body)
		}
	}
}

func (b *bench) csrf() string {
	b.t.Helper()
	code, me, _ := b.do("GET", "/api/me", "", nil)
	tok, _ := me["csrf"].(string)
	if code != 200 || tok == "" {
		b.t.Fatalf("GET /api/me: %d %v, want a CSRF token", code, me)
	}
	return tok
}

func (b *bench) login(password string) (int, map[string]any, *http.Response) {
	pw, _ := json.Marshal(map[string]string{"password": password})
	return b.do("POST", "/api/login", string(pw), map[string]string{"Content-Type": "application/json"})
}

// guardedRoutes are every route that acts for the owner.
var guardedRoutes = []struct{ method, path string }{
	{"POST", "/api/logout"},
	{"GET", "/api/sessions"}, {"GET", "/api/sessions/web:x"}, {"PATCH", "/api/sessions/web:x"}, {"DELETE", "/api/sessions/web:x"},
	{"GET", "/api/channels"}, {"POST", "/api/pairing/ABCD1234/approve"}, {"POST", "/api/pairing/ABCD1234/deny"},
	{"DELETE", "/api/pairing/approved/telegram/42"},
	{"GET", "/api/cron"}, {"POST", "/api/cron"}, {"PATCH", "/api/cron/j1"}, {"POST", "/api/cron/j1/run"}, {"DELETE", "/api/cron/j1"},
	{"GET", "/api/heartbeat"}, {"PUT", "/api/heartbeat"}, {"GET", "/api/settings"}, {"PATCH", "/api/settings"},
	{"GET", "/api/memory"}, {"PUT", "/api/memory"}, {"GET", "/api/skills"}, {"GET", "/api/logs"}, {"GET", "/api/usage"},
	{"GET", "/api/setup"}, {"POST", "/api/setup/check"}, {"POST", "/api/setup/password"},
	{"POST", "/api/render"},
	{"GET", "/api/nothing-here"},
}

// TestLoopbackIsNotAnIdentity: a request from this machine with no
// credential (the agent's own command, another local user) is refused on
// every owner route, whatever its Host, Origin or headers; the owner gets
// in with a one-time code or the access token.
func TestLoopbackIsNotAnIdentity(t *testing.T) {
	b := newBench(t, true, false)
	s := b.stranger()
	for _, r := range guardedRoutes {
		for _, h := range []map[string]string{
			nil,
			{"Host": "localhost"},
			{"Origin": "http://127.0.0.1"},
			{"Authorization": "Bearer " + strings.Repeat("0", 48)},
			{"X-CSRF-Token": "x"},
		} {
			if code, body, _ := s.do(r.method, r.path, `{}`, h); code != 401 {
				t.Errorf("%s %s from loopback with %v: %d %v, want 401", r.method, r.path, h, code, body)
			}
		}
	}
	_, me, _ := s.do("GET", "/api/me", "", nil)
	if me["authenticated"] != false || me["csrf"] != nil || me["admin"] != nil {
		t.Errorf("me without a login = %v, want unauthenticated, no CSRF token", me)
	}

	// The access token as a bearer key is the owner (a script): no CSRF
	// token needed, since no browser sends that header by itself.
	bearer := map[string]string{"Authorization": "Bearer " + b.owner.Token()}
	if code, body, _ := s.do("GET", "/api/sessions", "", bearer); code != 200 {
		t.Errorf("bearer GET: %d %v", code, body)
	}
	if code, body, _ := s.do("PUT", "/api/heartbeat", `{"content":"- check mail"}`, bearer); code == 401 || code == 403 {
		t.Errorf("bearer PUT: %d %v", code, body)
	}

	// A one-time code signs a browser in once.
	code := b.owner.LoginCode(time.Minute)
	if status, body, _ := s.signIn(code); status != 200 || body["csrf"] == "" {
		t.Fatalf("sign in with a code: %d %v", status, body)
	}
	if status, _, _ := s.do("GET", "/api/sessions", "", nil); status != 200 {
		t.Errorf("after signing in: %d", status)
	}
	other := b.stranger()
	if status, body, _ := other.signIn(code); status != 401 || body["path"] != "code" {
		t.Errorf("the same code again: %d %v, want 401 on path code", status, body)
	}
	if status, _, _ := other.signIn(owner.New(strings.Repeat("z", 48)).LoginCode(time.Minute)); status != 401 {
		t.Errorf("another instance's code: %d, want 401", status)
	}
	late := b.owner.LoginCode(time.Minute)
	b.clock.Add(2 * time.Minute)
	if status, _, _ := other.signIn(late); status != 401 {
		t.Errorf("an expired code: %d, want 401", status)
	}
}

func TestNoPasswordBeyondLoopbackRefused(t *testing.T) {
	b := newBench(t, false, false)
	for _, p := range []string{"/", "/ui/app.js", "/api/me", "/api/sessions"} {
		code, body, _ := b.do("GET", p, "", nil)
		if code != 403 || body["path"] != "gateway.webui.password" {
			t.Errorf("GET %s without a password beyond loopback: %d %v, want 403 naming gateway.webui.password", p, code, body)
		}
	}
}

func TestLoginCookieAndCSRF(t *testing.T) {
	b := newBench(t, false, true)
	b.seed(t)
	if code, _, _ := b.do("GET", "/api/sessions", "", nil); code != 401 {
		t.Fatalf("before login: %d, want 401", code)
	}
	if code, body, _ := b.login("wrong password!"); code != 401 || body["path"] != "password" {
		t.Fatalf("wrong password: %d %v, want 401 on path password", code, body)
	}
	code, body, resp := b.login(testPassword)
	if code != 200 || body["csrf"] == "" {
		t.Fatalf("login: %d %v", code, body)
	}
	var c *http.Cookie
	for _, k := range resp.Cookies() {
		if k.Name == cookieName {
			c = k
		}
	}
	if c == nil || !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.Secure || c.Path != "/" {
		t.Fatalf("login cookie %+v, want HttpOnly, SameSite=Strict, not Secure over plain HTTP", c)
	}
	if code, _, _ := b.do("GET", "/api/sessions", "", nil); code != 200 {
		t.Fatalf("after login: %d, want 200", code)
	}
	tok := b.csrf()
	rename := `{"title":"Renamed"}`
	key := "/api/sessions/" + url.PathEscape("telegram:42")
	for name, hdr := range map[string]map[string]string{
		"no token":     {},
		"wrong token":  {"X-CSRF-Token": strings.Repeat("0", len(tok))},
		"cross origin": {"X-CSRF-Token": tok, "Origin": "http://attacker.example"},
	} {
		if code, body, _ := b.do("PATCH", key, rename, hdr); code != 403 {
			t.Errorf("%s: %d %v, want 403", name, code, body)
		}
		if code, _, _ := b.do("DELETE", key, "", hdr); code != 403 {
			t.Errorf("DELETE with %s: %d, want 403", name, code)
		}
	}
	if code, body, _ := b.do("PATCH", key, rename, map[string]string{"X-CSRF-Token": tok}); code != 200 {
		t.Fatalf("rename with the token: %d %v", code, body)
	}
	if code, _, _ := b.do("POST", "/api/logout", "", map[string]string{"X-CSRF-Token": tok}); code != 200 {
		t.Fatalf("logout: %d", code)
	}
	if code, _, _ := b.do("GET", "/api/sessions", "", nil); code != 401 {
		t.Errorf("after logout: %d, want 401", code)
	}
}

func TestLoginLockout(t *testing.T) {
	b := newBench(t, false, true)
	for i := range freeFailures {
		if code, _, _ := b.login("nope nope nope"); code != 401 {
			t.Fatalf("failure %d: %d, want 401", i+1, code)
		}
	}
	// The failure after the free ones locks the address out for 1 s, then
	// 2 s, ...: during it even the right password is not checked.
	if code, _, _ := b.login("nope nope nope"); code != 401 {
		t.Fatalf("failure %d: %d, want 401", freeFailures+1, code)
	}
	code, body, resp := b.login(testPassword)
	if code != 429 || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("right password while locked out: %d %v, want 429 with Retry-After", code, body)
	}
	b.clock.Add(1100 * time.Millisecond)
	if code, _, _ := b.login("nope nope nope"); code != 401 {
		t.Fatalf("after the first lock-out: %d, want 401", code)
	}
	b.clock.Add(1100 * time.Millisecond)
	if code, _, _ := b.login(testPassword); code != 429 {
		t.Fatalf("the second lock-out lasts 2 s: %d, want 429", code)
	}
	b.clock.Add(time.Second)
	if code, body, _ := b.login(testPassword); code != 200 {
		t.Fatalf("after the lock-out: %d %v, want 200", code, body)
	}
}

func TestLoginWithoutPasswordSet(t *testing.T) {
	b := newBench(t, true, false).stranger()
	code, body, _ := b.login("anything at all")
	if msg, _ := body["error"].(string); code != 401 || body["path"] != "password" || !strings.Contains(msg, "nanobot webui open") {
		t.Errorf("login with no password configured: %d %v, want 401 pointing at `nanobot webui open`", code, body)
	}
}

const longResult = "line of tool output\n"

// seed stores a Telegram conversation with Markdown, a tool call and a
// long tool result, and a web one.
func (b *bench) seed(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	tg, err := b.store.Load(ctx, "telegram:42")
	if err != nil {
		t.Fatal(err)
	}
	err = b.store.Append(ctx, tg,
		providers.Message{Role: "user", Content: "what is in **needle** dir? <script>alert(1)</script>"},
		providers.Message{Role: "assistant", ToolCalls: []providers.ToolCall{{ID: "call_1", Type: "function", Function: providers.FunctionCall{Name: "exec", Arguments: `{"command":"ls"}`}}}},
		providers.Message{Role: "tool", ToolCallID: "call_1", Name: "exec", Content: strings.Repeat(longResult, 200)},
		providers.Message{Role: "assistant", Content: "Here:\n\n```go\nfunc main() {}\n```\n\n[x](javascript:alert(1))"},
	)
	if err != nil {
		t.Fatal(err)
	}
	b.clock.Add(time.Minute)
	web, err := b.store.Load(ctx, "web:abcdef123456")
	if err != nil {
		t.Fatal(err)
	}
	if err := b.store.Append(ctx, web, providers.Message{Role: "user", Content: "hello from the browser"}, providers.Message{Role: "assistant", Content: "hi"}); err != nil {
		t.Fatal(err)
	}
}

func TestConversations(t *testing.T) {
	b := newBench(t, true, false)
	b.seed(t)
	list := func(q string) []string {
		t.Helper()
		code, body, _ := b.do("GET", "/api/sessions?q="+url.QueryEscape(q), "", nil)
		if code != 200 {
			t.Fatalf("list %q: %d %v", q, code, body)
		}
		var keys []string
		for _, s := range body["sessions"].([]any) {
			keys = append(keys, s.(map[string]any)["key"].(string))
		}
		return keys
	}
	if got := list(""); len(got) != 2 || got[0] != "web:abcdef123456" || got[1] != "telegram:42" {
		t.Errorf("list = %v, want the web then the telegram session (newest first)", got)
	}
	if got := list("NEEDLE"); len(got) != 1 || got[0] != "telegram:42" {
		t.Errorf("search needle = %v, want telegram:42", got)
	}
	if got := list("hello from"); len(got) != 1 || got[0] != "web:abcdef123456" {
		t.Errorf("search content = %v, want the web session", got)
	}

	key := "/api/sessions/" + url.PathEscape("telegram:42")
	code, body, _ := b.do("GET", key, "", nil)
	if code != 200 {
		t.Fatalf("history: %d %v", code, body)
	}
	msgs := body["messages"].([]any)
	if len(msgs) != 4 {
		t.Fatalf("history has %d messages, want 4", len(msgs))
	}
	user := msgs[0].(map[string]any)["html"].(string)
	if !strings.Contains(user, "<strong>needle</strong>") || strings.Contains(user, "<script") {
		t.Errorf("user message html %q: want Markdown rendered and the script dropped", user)
	}
	call := msgs[1].(map[string]any)["toolCalls"].([]any)[0].(map[string]any)
	if call["name"] != "exec" || call["arguments"] != `{"command":"ls"}` {
		t.Errorf("tool call %v", call)
	}
	res := msgs[2].(map[string]any)
	full := len(strings.Repeat(longResult, 200))
	if res["truncated"] != true || int(res["length"].(float64)) != full || len(res["text"].(string)) != toolPreview {
		t.Errorf("tool result: truncated %v length %v text %d, want a %d-char preview of %d", res["truncated"], res["length"], len(res["text"].(string)), toolPreview, full)
	}
	code, body, _ = b.do("GET", key+"?full=call_1", "", nil)
	if got := body["messages"].([]any)[2].(map[string]any); code != 200 || len(got["text"].(string)) != full {
		t.Errorf("show all: %d, %d chars, want %d", code, len(got["text"].(string)), full)
	}
	answer := msgs[3].(map[string]any)["html"].(string)
	if !strings.Contains(answer, `class="hl"`) || strings.Contains(answer, "javascript:") {
		t.Errorf("answer html %q: want highlighted code and no javascript: link", answer)
	}
	if body["session"].(map[string]any)["chatable"] != false {
		t.Error("a telegram session is chatable")
	}

	if code, _, _ := b.do("GET", "/api/sessions/"+url.PathEscape("telegram:nobody"), "", nil); code != 404 {
		t.Errorf("unknown session: %d, want 404", code)
	}

	tok := b.csrf()
	hdr := map[string]string{"X-CSRF-Token": tok}
	for _, bad := range []string{`{"title":""}`, `{"title":"two\nlines"}`, `{"title":"` + strings.Repeat("x", 201) + `"}`} {
		if code, body, _ := b.do("PATCH", key, bad, hdr); code != 400 || body["path"] != "title" {
			t.Errorf("rename %s: %d %v, want 400 on path title", bad, code, body)
		}
	}
	if code, body, _ := b.do("PATCH", key, `{"title":"Plans for May"}`, hdr); code != 200 {
		t.Fatalf("rename: %d %v", code, body)
	}
	if got := list("plans for"); len(got) != 1 || got[0] != "telegram:42" {
		t.Errorf("search by the new title = %v", got)
	}
	if code, body, _ := b.do("DELETE", key, "", hdr); code != 200 {
		t.Fatalf("delete: %d %v", code, body)
	}
	if got := list(""); len(got) != 1 || got[0] != "web:abcdef123456" {
		t.Errorf("after delete = %v, want only the web session", got)
	}
	if code, _, _ := b.do("DELETE", key, "", hdr); code != 404 {
		t.Errorf("delete again: %d, want 404", code)
	}
	if code, _, _ := b.do("GET", "/api/nothing-here", "", nil); code != 404 {
		t.Errorf("unknown endpoint: %d, want 404", code)
	}
}

func TestPageServedWithCSP(t *testing.T) {
	b := newBench(t, true, false)
	for _, p := range []string{"/", "/ui/app.js", "/ui/api.js", "/ui/chat.js", "/ui/style.css", "/ui/highlight.css"} {
		req, _ := http.NewRequest("GET", b.srv.URL+p, nil)
		resp, err := b.hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(resp.Header.Get("Content-Security-Policy"), "default-src 'self'") {
			t.Errorf("GET %s: %d, CSP %q", p, resp.StatusCode, resp.Header.Get("Content-Security-Policy"))
		}
	}
}

// TestFavicon: the icon the page links and the /favicon.ico browsers ask
// for anyway are served (no 404 in the console), with no login.
func TestFavicon(t *testing.T) {
	b := newBench(t, true, false).stranger()
	for _, p := range []string{"/favicon.ico", "/ui/favicon.svg"} {
		resp, err := b.hc.Get(b.srv.URL + p)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "image/svg+xml" || !strings.HasPrefix(string(body), "<svg") {
			t.Errorf("GET %s: %d %q %.40q, want 200 with the SVG icon", p, resp.StatusCode, resp.Header.Get("Content-Type"), body)
		}
	}
}

func TestHashPassword(t *testing.T) {
	if _, err := HashPassword("short"); err == nil {
		t.Error("a 5-character password was accepted")
	}
	h, err := HashPassword(testPassword)
	if err != nil {
		t.Fatal(err)
	}
	if bcrypt.CompareHashAndPassword([]byte(h), []byte(testPassword)) != nil {
		t.Error("the hash does not match its password")
	}
}

// A channels-only cluster instance keeps no conversations or cron jobs:
// their routes say so with 503 instead of failing on a missing store, and
// the login guard still comes first.
func TestInstanceWithoutStores(t *testing.T) {
	b := newBench(t, true, false, func(o *Options) { o.Sessions, o.Cron = nil, nil })
	for _, c := range []struct{ method, path, want string }{
		{"GET", "/api/sessions", "keeps no conversations"},
		{"DELETE", "/api/sessions/web:x", "keeps no conversations"},
		{"GET", "/api/cron", "keeps no cron jobs"},
		{"POST", "/api/cron/j1/run", "keeps no cron jobs"},
	} {
		hdr := map[string]string{}
		if c.method != "GET" {
			hdr["X-CSRF-Token"] = b.csrf()
		}
		code, body, _ := b.do(c.method, c.path, "", hdr)
		if msg, _ := body["error"].(string); code != http.StatusServiceUnavailable || !strings.Contains(msg, c.want) {
			t.Errorf("%s %s: %d %v, want 503 %q", c.method, c.path, code, body, c.want)
		}
	}
	if code, _, _ := b.stranger().do("GET", "/api/sessions", "", nil); code != 401 {
		t.Errorf("GET /api/sessions without a login: %d, want 401 before 503", code)
	}
}

// A code whose use cannot be recorded is refused (it must not work twice),
// and the answer says so instead of calling the link used or mistyped.
func TestSignInRefusedWhenItsUseCannotBeRecorded(t *testing.T) {
	dir := t.TempDir()
	key, err := owner.Load(owner.Path(dir))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, owner.UsedFileName), 0o700); err != nil {
		t.Fatal(err)
	}
	b := newBench(t, false, true, func(o *Options) { o.Owner = key })
	status, body, _ := b.signIn(key.LoginCode(time.Minute))
	if msg, _ := body["error"].(string); status != 401 || !strings.Contains(msg, "could not be recorded") || strings.Contains(msg, dir) {
		t.Errorf("sign-in: %d %v", status, body)
	}
}
