package webui

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/nanobot-go/nanobot/channels"
)

const (
	cookieName = "nanobot_workbench"
	csrfHeader = "X-CSRF-Token"
	loginTTL   = 24 * time.Hour
	maxLogins  = 1000
	// freeFailures are the failed logins an address gets before the
	// lock-out starts; each further one doubles it, up to maxLockout.
	freeFailures = 3
	maxLockout   = 15 * time.Minute
)

// auth holds the logins and the lock-outs. Its maps are guarded by mu.
type auth struct {
	hash     []byte
	loopback bool
	now      func() time.Time
	// loopCSRF is the CSRF token of loopback browsers (they have no login):
	// only a page that can read GET /api/me (same origin) learns it.
	loopCSRF string

	mu       sync.Mutex
	logins   map[string]login    // cookie value -> login
	failures map[string]*failure // client address -> failed attempts
}

type login struct {
	csrf    string
	expires time.Time
}

type failure struct {
	count int
	until time.Time
}

func newAuth(o Options) *auth {
	return &auth{hash: []byte(o.PasswordHash), loopback: o.Loopback, now: o.Now, loopCSRF: randomToken(),
		logins: map[string]login{}, failures: map[string]*failure{}}
}

func randomToken() string {
	var b [32]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// genuineLoopback reports whether r is a browser (or script) on this
// machine asking a loopback bind by a loopback name: not a page whose name
// was re-pointed at 127.0.0.1 (DNS rebinding), not a reverse proxy.
func (a *auth) genuineLoopback(r *http.Request) bool {
	return a.loopback && channels.GenuineLoopback(r)
}

// principal is who a request is: ok says it may use the API, csrf is the
// token its state changes must carry.
func (a *auth) principal(r *http.Request) (csrf string, ok bool) {
	if a.genuineLoopback(r) {
		return a.loopCSRF, true
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

// guard admits logged-in (or loopback) requests; state changes must also
// carry the CSRF token and come from this origin.
func (s *Server) guard(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		csrf, ok := s.auth.principal(r)
		if !ok {
			writeError(w, http.StatusUnauthorized, "", "login required")
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
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
		"loopback":      s.auth.genuineLoopback(r),
		"passwordSet":   len(s.auth.hash) > 0,
	}
	if ok {
		// Password login and loopback are both the owner's: admin.
		out["admin"] = true
		out["csrf"] = csrf
	}
	writeJSON(w, http.StatusOK, out)
}

func clientAddr(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

func (s *Server) login(w http.ResponseWriter, r *http.Request) {
	if !sameOrigin(r) {
		writeError(w, http.StatusForbidden, "", "cross-origin login refused")
		return
	}
	var body struct {
		Password string `json:"password"`
	}
	if !readJSON(w, r, &body) {
		return
	}
	if len(s.auth.hash) == 0 {
		writeError(w, http.StatusBadRequest, "password", "no workbench password is set: browsers on this machine need none; set one with `nanobot webui set-password`")
		return
	}
	addr := clientAddr(r)
	now := s.o.Now()
	s.auth.mu.Lock()
	f := s.auth.failures[addr]
	if f != nil && now.Before(f.until) {
		wait := f.until.Sub(now)
		s.auth.mu.Unlock()
		w.Header().Set("Retry-After", strconv.Itoa(int(wait.Seconds())+1))
		writeError(w, http.StatusTooManyRequests, "", fmt.Sprintf("too many failed logins; try again in %s", wait.Round(time.Second)))
		return
	}
	s.auth.mu.Unlock()

	if bcrypt.CompareHashAndPassword(s.auth.hash, []byte(body.Password)) != nil {
		s.auth.mu.Lock()
		f := s.auth.failures[addr]
		if f == nil {
			f = &failure{}
			s.auth.failures[addr] = f
		}
		f.count++
		if n := f.count - freeFailures; n > 0 {
			f.until = now.Add(min(time.Second<<min(n-1, 20), maxLockout))
		}
		count := f.count
		s.auth.mu.Unlock()
		s.log.Warn("workbench: failed login", "remote", addr, "failures", count)
		writeError(w, http.StatusUnauthorized, "password", "wrong password")
		return
	}

	tok, csrf := randomToken(), randomToken()
	s.auth.mu.Lock()
	delete(s.auth.failures, addr)
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
	s.log.Info("workbench: login", "remote", addr)
	writeJSON(w, http.StatusOK, map[string]any{"authenticated": true, "admin": true, "csrf": csrf})
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
