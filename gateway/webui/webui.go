// Package webui is the web workbench the gateway serves at /: a small
// page of plain ES modules (embedded; no Node toolchain) over a JSON API
// under /api/. The chat itself stays in channels/web (its WebSocket at
// /ws); the workbench adds what an owner needs around it: every channel's
// conversations, their history rendered from Markdown, and the login.
//
// Access: every request needs a credential, from 127.0.0.1 too (the
// agent's own commands and other local users reach a loopback port just as
// the owner's browser does; see auth.go). A browser logs in with a
// one-time sign-in code signed with the instance's owner key (the link the
// gateway prints at start-up, or `nanobot webui open`) or with the
// password whose bcrypt hash is gateway.webui.password; a script may send
// the owner's access token as a bearer key. A non-loopback bind without a
// password serves no workbench. A login is an HttpOnly, SameSite=Strict
// cookie (Secure over TLS); every state-changing request of a login also
// carries the CSRF token GET /api/me hands out, in the X-CSRF-Token header.
// Failed logins are counted before they are checked, one check at a time
// per client (address, or /64 for IPv6), with a doubling lock-out. The
// gateway hands SignedIn to the web chat, so a login also opens the chat's
// WebSocket (which checks the Origin itself).
//
// A Server is safe for concurrent use by any number of requests.
package webui

import (
	"bytes"
	"context"
	"embed"
	"encoding/json"
	"errors"
	"io/fs"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/nanobot-go/nanobot/agent/session"
	"github.com/nanobot-go/nanobot/agent/skills/registry"
	"github.com/nanobot-go/nanobot/channels"
	"github.com/nanobot-go/nanobot/configs"
	"github.com/nanobot-go/nanobot/gateway/cron"
	"github.com/nanobot-go/nanobot/gateway/logging"
	"github.com/nanobot-go/nanobot/gateway/relay"
	"github.com/nanobot-go/nanobot/gateway/setup"
	"github.com/nanobot-go/nanobot/internal/owner"
	"github.com/nanobot-go/nanobot/internal/reqbody"
	"github.com/nanobot-go/nanobot/providers"
	"github.com/nanobot-go/nanobot/tools/approval"
	"github.com/nanobot-go/nanobot/tools/goals"
)

//go:embed static
var static embed.FS

// maxLockWait bounds how long an edit waits for the memory lock.
const maxLockWait = 10 * time.Second

// ErrNoPassword is why the workbench is off on a non-loopback bind
// without gateway.webui.password.
var ErrNoPassword = errors.New("the web workbench is off: the gateway listens beyond loopback but gateway.webui.password is not set (run `nanobot webui set-password`, then restart)")

// Options are what the gateway hands the workbench.
type Options struct {
	// PasswordHash is gateway.webui.password (a bcrypt hash; "" = none).
	PasswordHash string
	// Loopback is true when the HTTP server listens on loopback only:
	// beyond it, the workbench needs PasswordHash.
	Loopback bool
	// Owner is the instance's owner key: its one-time codes sign a
	// browser in, and its access token admits a script (nil: neither,
	// only the password).
	Owner *owner.Key
	// Sessions is the conversation store the agent writes (nil: the
	// conversations pages answer 503).
	Sessions session.Store
	// Reset sets a conversation aside the way the /new chat command does
	// (consolidated into memory, then archived); the workbench's delete
	// calls it. It returns an error wrapping ErrBusy while the
	// conversation is answering. Nil: delete only archives.
	Reset func(ctx context.Context, key string) error
	// Health reports each channel's connection state (nil: none).
	Health func() map[string]channels.Health
	// Pairing is the pairing store the access gate consults (nil: the
	// pairing endpoints answer 503).
	Pairing *relay.PairingStore
	// SkillInstaller installs skills from the registries into the default
	// agent's workspace (nil: the registry endpoints answer 503).
	SkillInstaller *registry.Installer
	// Goals are the agents' sustained goals (nil: none kept).
	Goals *goals.Store
	// Approvals holds the tools' requests for the owner's approval (nil:
	// approval is off; the page says so).
	Approvals *approval.Broker
	// Cron is the jobs store the cron service runs (nil: the automation
	// endpoints answer 503).
	Cron *cron.Store
	// Workspace holds HEARTBEAT.md ("" : no heartbeat editing).
	Workspace string
	// MemoryLock serialises MEMORY.md writers sharing the workspace (the
	// cluster's lock; nil: none). The write is made only while held has
	// not ended (the lock is lost when it does).
	MemoryLock func(ctx context.Context) (held context.Context, release func(), err error)
	// Heartbeat is gateway.heartbeat, shown beside the file.
	Heartbeat configs.HeartbeatConfig
	// ConfigFile is config.json, edited by the settings page ("": the
	// settings endpoints answer 503).
	ConfigFile string
	// Platforms are the channel platforms' typed configs, so edits are
	// checked as strictly as at load (see configs.Options.Platforms).
	Platforms map[string]any
	// Apply applies a saved config's live settings (the allow-lists) to
	// the running gateway.
	Apply func(next *configs.Config)
	// RestartNeeded lists the settings whose saved value differs from the
	// running one and takes effect after a restart (nil: none known).
	RestartNeeded func() []string
	// Setup runs the setup page's live checks (nil: setup.New(), the
	// platforms' public APIs); tests point it at fakes.
	Setup *setup.Checker
	// ProviderSettings turns a config's providers into what
	// providers.Resolve takes, sign-ins included, so the setup page
	// resolves the model as the agent does (nil: setup.ProviderSettings,
	// which knows no sign-ins).
	ProviderSettings func(c *configs.Config) map[string]providers.Settings
	// Logs are the process's last log lines, redacted (nil: none).
	Logs *logging.Ring
	// UsageDir is the usage ledger's folder, read by GET /api/usage
	// (empty: that endpoint answers 503); UsageLocation is where its days
	// begin (default Local).
	UsageDir      string
	UsageLocation *time.Location
	// Log receives the workbench's own events (logins, lock-outs).
	Log *slog.Logger
	// Now is the clock (default time.Now); tests move it.
	Now func() time.Time
}

// Server serves the workbench and its API.
type Server struct {
	o   Options
	log *slog.Logger
	// off is why the workbench is not served (nil: it is).
	off    error
	auth   *auth
	render *markdown
	// settingsMu serialises config edits.
	settingsMu sync.Mutex
	// checks holds the setup page's live checks to one at a time and a
	// few a minute; defaultChecker runs them without Options.Setup.
	checks         checkGate
	defaultChecker *setup.Checker
}

// New builds the workbench. For a non-loopback bind without a password
// the workbench it builds refuses every request (see Off), so the owner's
// pages are never open to the network.
func New(o Options) (*Server, error) {
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	r, err := newMarkdown()
	if err != nil {
		return nil, err
	}
	s := &Server{o: o, log: o.Log, auth: newAuth(o), render: r, defaultChecker: setup.New()}
	if o.PasswordHash == "" && !o.Loopback {
		s.off = ErrNoPassword
	}
	return s, nil
}

// Off returns why the workbench refuses to serve, or nil.
func (s *Server) Off() error { return s.off }

// Mount adds the workbench's routes to mux: the page at exactly "/", its
// assets under /ui/, and the API under /api/ (GET /api/status stays the
// gateway's own and wins by being more specific).
func (s *Server) Mount(mux *http.ServeMux) {
	if s.off != nil {
		refuse := func(w http.ResponseWriter, r *http.Request) {
			writeError(w, http.StatusForbidden, "gateway.webui.password", s.off.Error())
		}
		mux.HandleFunc("GET /{$}", refuse)
		mux.HandleFunc("/ui/", refuse)
		mux.HandleFunc("/api/", refuse)
		return
	}
	sub, _ := fs.Sub(static, "static")
	files := http.FileServerFS(sub)
	page := func(w http.ResponseWriter, r *http.Request) {
		securityHeaders(w)
		http.ServeFileFS(w, r, sub, "index.html")
	}
	mux.HandleFunc("GET /{$}", page)
	// Browsers ask for /favicon.ico whatever the page links: the same
	// icon, so no page load logs a 404.
	mux.HandleFunc("GET /favicon.ico", func(w http.ResponseWriter, r *http.Request) {
		securityHeaders(w)
		w.Header().Set("Content-Type", "image/svg+xml")
		w.Header().Set("Cache-Control", "max-age=86400")
		http.ServeFileFS(w, r, sub, "favicon.svg")
	})
	mux.Handle("GET /ui/", http.StripPrefix("/ui/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		securityHeaders(w)
		if r.URL.Path == "highlight.css" {
			w.Header().Set("Content-Type", "text/css; charset=utf-8")
			_, _ = w.Write(s.render.css)
			return
		}
		files.ServeHTTP(w, r)
	})))

	mux.HandleFunc("POST /api/login", s.login)
	mux.HandleFunc("POST /api/logout", s.guard(s.logout))
	mux.HandleFunc("GET /api/me", s.me)
	sessions := needs(s.o.Sessions != nil, "this gateway instance keeps no conversations (a channels-only cluster role)")
	mux.HandleFunc("GET /api/sessions", s.guard(sessions(s.listSessions)))
	mux.HandleFunc("GET /api/sessions/{key}", s.guard(sessions(s.getSession)))
	mux.HandleFunc("PATCH /api/sessions/{key}", s.guard(sessions(s.renameSession)))
	mux.HandleFunc("DELETE /api/sessions/{key}", s.guard(sessions(s.deleteSession)))
	mux.HandleFunc("GET /api/channels", s.guard(s.listChannels))
	mux.HandleFunc("POST /api/pairing/{code}/approve", s.guard(s.approvePairing))
	mux.HandleFunc("POST /api/pairing/{code}/deny", s.guard(s.denyPairing))
	mux.HandleFunc("DELETE /api/pairing/approved/{channel}/{sender}", s.guard(s.revokePairing))
	mux.HandleFunc("GET /api/approvals", s.guard(s.listApprovals))
	mux.HandleFunc("GET /api/goals", s.guard(s.listGoals))
	mux.HandleFunc("POST /api/goals/{id}/cancel", s.guard(s.cancelGoal))
	mux.HandleFunc("POST /api/approvals/{id}", s.guard(s.answerApproval))
	jobs := needs(s.o.Cron != nil, "this gateway instance keeps no cron jobs")
	mux.HandleFunc("GET /api/cron", s.guard(jobs(s.listJobs)))
	mux.HandleFunc("POST /api/cron", s.guard(jobs(s.addJob)))
	mux.HandleFunc("PATCH /api/cron/{id}", s.guard(jobs(s.patchJob)))
	mux.HandleFunc("POST /api/cron/{id}/run", s.guard(jobs(s.runJob)))
	mux.HandleFunc("DELETE /api/cron/{id}", s.guard(jobs(s.deleteJob)))
	mux.HandleFunc("GET /api/heartbeat", s.guard(s.getHeartbeat))
	mux.HandleFunc("PUT /api/heartbeat", s.guard(s.putHeartbeat))
	mux.HandleFunc("GET /api/settings", s.guard(s.getSettings))
	mux.HandleFunc("PATCH /api/settings", s.guard(s.patchSettings))
	mux.HandleFunc("GET /api/setup", s.guard(s.getSetup))
	mux.HandleFunc("POST /api/setup/check", s.guard(s.postSetupCheck))
	mux.HandleFunc("POST /api/setup/password", s.guard(s.postSetupPassword))
	mux.HandleFunc("GET /api/memory", s.guard(s.getMemory))
	mux.HandleFunc("PUT /api/memory", s.guard(s.putMemory))
	mux.HandleFunc("GET /api/skills", s.guard(s.listSkills))
	mux.HandleFunc("GET /api/skills/registry", s.guard(s.searchSkills))
	mux.HandleFunc("POST /api/skills/install", s.guard(s.installSkill))
	mux.HandleFunc("DELETE /api/skills/{name}", s.guard(s.removeSkill))
	mux.HandleFunc("GET /api/logs", s.guard(s.getLogs))
	mux.HandleFunc("POST /api/render", s.guard(s.postRender))
	mux.HandleFunc("GET /api/usage", s.guard(s.getUsage))
	mux.HandleFunc("/api/", s.guard(func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "", "no such API endpoint: "+r.Method+" "+r.URL.Path)
	}))
}

func securityHeaders(w http.ResponseWriter) {
	w.Header().Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; style-src 'self'; connect-src 'self'; frame-ancestors 'none'")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Referrer-Policy", "no-referrer")
	w.Header().Set("X-Frame-Options", "DENY")
}

// apiError is every error the API returns; Path names the JSON path of the
// field at fault when there is one.
type apiError struct {
	Error string `json:"error"`
	Path  string `json:"path,omitempty"`
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, status int, path, msg string) {
	writeJSON(w, status, apiError{Error: msg, Path: path})
}

// needs wraps handlers of data this instance may not keep (a channels-only
// cluster role keeps no sessions or cron jobs): without it they answer 503
// with why.
func needs(kept bool, why string) func(http.HandlerFunc) http.HandlerFunc {
	return func(h http.HandlerFunc) http.HandlerFunc {
		if kept {
			return h
		}
		return func(w http.ResponseWriter, _ *http.Request) { writeError(w, http.StatusServiceUnavailable, "", why) }
	}
}

// internalError logs what failed (op, the error and attrs) and answers 500
// with msg alone: the error may name paths the page has no business seeing.
func (s *Server) internalError(w http.ResponseWriter, op string, err error, msg string, attrs ...any) {
	s.log.Error("workbench: "+op, append(attrs, "err", err)...)
	writeError(w, http.StatusInternalServerError, "", msg)
}

// readJSON decodes a small JSON body into v, refusing unknown fields.
func readJSON(w http.ResponseWriter, r *http.Request, v any) bool {
	body, err := reqbody.Read(w, r, 256<<10)
	if err != nil {
		switch status := reqbody.Status(err); status {
		case http.StatusRequestEntityTooLarge:
			writeError(w, status, "", "body larger than 256 KiB")
		case http.StatusRequestTimeout:
			writeError(w, status, "", "body did not arrive in time")
		default:
			writeError(w, status, "", "could not read the body")
		}
		return false
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		writeError(w, http.StatusBadRequest, "", "bad JSON body: "+err.Error())
		return false
	}
	return true
}
