package webui

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/nanobot-go/nanobot/internal/owner"
)

const (
	cookieName = "nanobot_workbench"
	csrfHeader = "X-CSRF-Token"
	loginTTL   = 24 * time.Hour
	maxLogins  = 1000
	// freeFailures are the failed logins a client gets before the
	// lock-out starts; each further one doubles it, up to maxLockout.
	freeFailures = 3
	maxLockout   = 15 * time.Minute
	// maxClients bounds the lock-out table; past it, entries whose
	// lock-out has ended are dropped first.
	maxClients = 10000
)

// auth holds the logins and the lock-outs. Its maps are guarded by mu; no
// IO and no password check run while mu is held.
//
// Nobody is let in for where a request comes from: a command the agent
// runs and another user of this machine reach a loopback port exactly as
// the owner's browser does. A request is the owner's when it carries a
// live login cookie (made by POST /api/login from the password or a
// one-time code signed with the instance's owner key) or the owner's
// access token as a bearer key.
type auth struct {
	hash  []byte
	owner *owner.Key // nil: no owner key (tests of the password alone)
	now   func() time.Time
	log   *slog.Logger

	mu       sync.Mutex
	logins   map[string]login     // cookie value -> login
	failures map[string]*attempts // client (address, IPv6 /64) -> attempts
}

type login struct {
	csrf    string
	expires time.Time
}

// attempts are one client's login attempts: count is every attempt not
// followed by a success, counted before its check; checking is true while
// one of its attempts is being checked (one at a time per client).
type attempts struct {
	count    int
	until    time.Time
	checking bool
}

func newAuth(o Options) *auth {
	return &auth{hash: []byte(o.PasswordHash), owner: o.Owner, now: o.Now, log: o.Log,
		logins: map[string]login{}, failures: map[string]*attempts{}}
}

func randomToken() string {
	var b [32]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// bearerCSRF marks a principal that showed the access token as a bearer
// key: no browser sends that header by itself, so such a request needs no
// CSRF token.
const bearerCSRF = "\x00bearer"

// principal is who a request is: ok says it may use the API, csrf is the
// token its state changes must carry (bearerCSRF: none needed).
func (a *auth) principal(r *http.Request) (csrf string, ok bool) {
	if tok, found := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); found {
		if a.owner != nil && a.owner.Check(strings.TrimSpace(tok)) {
			return bearerCSRF, true
		}
		return "", false
	}
	c, err := r.Cookie(cookieName)
	if err != nil || c.Value == "" {
		return "", false
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	l, found := a.logins[c.Value]
	if !found || a.now().After(l.expires) {
		delete(a.logins, c.Value)
		return "", false
	}
	return l.csrf, true
}

// SignedIn reports whether r carries a live workbench login (the cookie
// POST /api/login set). The web chat admits such a browser's WebSocket as
// it admits one that shows the token (see web.Channel.SetLogin); its own
// Origin check still applies. A workbench that is off signs in nobody.
func (s *Server) SignedIn(r *http.Request) bool {
	if s.off != nil {
		return false
	}
	c, err := r.Cookie(cookieName)
	if err != nil || c.Value == "" {
		return false
	}
	s.auth.mu.Lock()
	defer s.auth.mu.Unlock()
	l, found := s.auth.logins[c.Value]
	return found && !s.auth.now().After(l.expires)
}

// sameOrigin reports whether a browser-sent Origin (when present) names
// the host the request was sent to.
func sameOrigin(r *http.Request) bool {
	origin := r.Header.Get("Origin")
	if origin == "" {
		return true
	}
	u, err := url.Parse(origin)
	return err == nil && u.Host == r.Host
}

// guard admits the owner's requests (a login or the bearer token); a
// login's state changes must also carry its CSRF token and come from this
// origin.
func (s *Server) guard(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		csrf, ok := s.auth.principal(r)
		if !ok {
			writeError(w, http.StatusUnauthorized, "", "login required")
			return
		}
		if csrf != bearerCSRF && r.Method != http.MethodGet && r.Method != http.MethodHead {
			got := r.Header.Get(csrfHeader)
			if !sameOrigin(r) || got == "" || subtle.ConstantTimeCompare([]byte(got), []byte(csrf)) != 1 {
				writeError(w, http.StatusForbidden, "", "missing or wrong CSRF token (send the token from GET /api/me in the "+csrfHeader+" header)")
				return
			}
		}
		h(w, r)
	}
}

// me tells the page whether it must show the login form, and hands a
// signed-in page its CSRF token.
func (s *Server) me(w http.ResponseWriter, r *http.Request) {
	csrf, ok := s.auth.principal(r)
	out := map[string]any{
		"authenticated": ok,
		"passwordSet":   len(s.auth.hash) > 0,
		"codeLogin":     s.auth.owner != nil,
	}
	if ok {
		// Every way in is the owner's: admin.
		out["admin"] = true
		if csrf != bearerCSRF {
			out["csrf"] = csrf
		}
	}
	writeJSON(w, http.StatusOK, out)
}

// clientKey is what the lock-out counts by: the peer's address, or its
// /64 for IPv6 (one host holds a whole /64 and can rotate through it).
func clientKey(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return host
	}
	ip = ip.Unmap()
	if ip.Is6() {
		p, _ := ip.Prefix(64)
		return p.String()
	}
	return ip.String()
}

// errLoginBusy refuses an attempt while another of the same client's is
// being checked.
var errLoginBusy = errors.New("another login attempt from this address is being checked")

// begin starts an attempt of client: it is counted now, before its check,
// so attempts sent at once cannot all slip in before a lock-out, and only
// one attempt per client is checked at a time. It returns how long the
// client must wait (locked out), or errLoginBusy.
func (a *auth) begin(client string, now time.Time) (time.Duration, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	f := a.failures[client]
	if f == nil {
		if len(a.failures) >= maxClients {
			a.pruneLocked(now)
		}
		f = &attempts{}
		a.failures[client] = f
	}
	if now.Before(f.until) {
		return f.until.Sub(now), nil
	}
	if f.checking {
		return 0, errLoginBusy
	}
	f.checking = true
	f.count++
	if n := f.count - freeFailures; n > 0 {
		// Counted as a failure until it proves otherwise; the next attempt
		// waits whatever this one's outcome, unless it succeeds.
		f.until = now.Add(min(time.Second<<min(n-1, 20), maxLockout))
	}
	return 0, nil
}

// end finishes client's attempt: a success forgets its failures.
func (a *auth) end(client string, ok bool) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	f := a.failures[client]
	if f == nil {
		return 0
	}
	f.checking = false
	if ok {
		delete(a.failures, client)
		return 0
	}
	return f.count
}

// pruneLocked drops clients that are neither locked out nor being checked,
// and if that is not enough, the oldest lock-outs' data is kept anyway:
// the table only grows past maxClients while that many are locked out.
func (a *auth) pruneLocked(now time.Time) {
	for k, f := range a.failures {
		if !f.checking && !now.Before(f.until) {
			delete(a.failures, k)
		}
	}
}

// check tells whether the attempt's secret is right: a one-time code
// signed with the owner key, or the workbench password.
func (a *auth) check(password, code string) (ok bool, why string) {
	switch {
	case code != "":
		if a.owner == nil {
			return false, "sign-in links are not available on this instance"
		}
		if err := a.owner.Redeem(code); err != nil {
			if !owner.IsCodeError(err) {
				// The use could not be recorded (a disk problem): refused,
				// since a code must not work twice, and said as it is.
				a.log.Error("workbench: a sign-in code's use could not be recorded; the sign-in is refused", "err", err)
				return false, "this sign-in link could not be recorded as used (see the gateway's log); try it again once that is fixed"
			}
			return false, "this sign-in link is not valid (used, expired or mistyped): run `nanobot webui open` for a new one"
		}
		return true, ""
	case len(a.hash) == 0:
		return false, "no workbench password is set: sign in with the link the gateway printed or `nanobot webui open`; or set a password with `nanobot webui set-password`"
	case bcrypt.CompareHashAndPassword(a.hash, []byte(password)) != nil:
		return false, "wrong password"
	}
	return true, ""
}

func (s *Server) login(w http.ResponseWriter, r *http.Request) {
	if !sameOrigin(r) {
		writeError(w, http.StatusForbidden, "", "cross-origin login refused")
		return
	}
	var body struct {
		Password string `json:"password"`
		Code     string `json:"code"`
	}
	if !readJSON(w, r, &body) {
		return
	}
	field := "password"
	if body.Code != "" {
		field = "code"
	}
	client := clientKey(r)
	now := s.o.Now()
	wait, err := s.auth.begin(client, now)
	switch {
	case err != nil:
		w.Header().Set("Retry-After", "1")
		writeError(w, http.StatusTooManyRequests, "", err.Error()+"; try again in a moment")
		return
	case wait > 0:
		secs := retrySeconds(wait)
		w.Header().Set("Retry-After", strconv.Itoa(secs))
		writeError(w, http.StatusTooManyRequests, "", fmt.Sprintf("too many failed logins; try again in %s", time.Duration(secs)*time.Second))
		return
	}
	ok, why := s.auth.check(body.Password, body.Code)
	count := s.auth.end(client, ok)
	if !ok {
		s.log.Warn("workbench: failed login", "remote", client, "with", field, "failures", count)
		writeError(w, http.StatusUnauthorized, field, why)
		return
	}

	tok, csrf := randomToken(), randomToken()
	s.auth.mu.Lock()
	for k, l := range s.auth.logins {
		if now.After(l.expires) || len(s.auth.logins) >= maxLogins {
			delete(s.auth.logins, k)
		}
	}
	s.auth.logins[tok] = login{csrf: csrf, expires: now.Add(loginTTL)}
	s.auth.mu.Unlock()
	http.SetCookie(w, &http.Cookie{
		Name: cookieName, Value: tok, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode,
		Secure: r.TLS != nil, MaxAge: int(loginTTL.Seconds()),
	})
	s.log.Info("workbench: login", "remote", client, "with", field)
	writeJSON(w, http.StatusOK, map[string]any{"authenticated": true, "admin": true, "csrf": csrf})
}

// retrySeconds is wait in whole seconds, rounded up (at least 1): what
// Retry-After says and the message repeats, so a client that waits as told
// is never early, and "try again in 0s" is never said.
func retrySeconds(wait time.Duration) int {
	return max(1, int((wait+time.Second-1)/time.Second))
}

func (s *Server) logout(w http.ResponseWriter, r *http.Request) {
	if c, err := r.Cookie(cookieName); err == nil {
		s.auth.mu.Lock()
		delete(s.auth.logins, c.Value)
		s.auth.mu.Unlock()
	}
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: "", Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil, MaxAge: -1})
	writeJSON(w, http.StatusOK, map[string]any{"authenticated": false})
}
