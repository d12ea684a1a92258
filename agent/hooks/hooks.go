// Package hooks runs the user's hooks (docs/hooks.md): external programs
// and HTTP endpoints the agent asks at its hook points, which may observe,
// modify or veto what happens there.
//
// A Set is built once from the config (New does no IO) and is then
// read-only: Run may be called from any number of goroutines at once (the
// agent calls it from each session's worker and each tool call). One call
// of one hook is bounded by the hook's timeout; the hooks of a point are
// asked in config order, each seeing the data as the previous ones left
// it, and the first veto ends the round. A failed call (an error, a
// timeout, a crash, an answer that is not the protocol) is logged and
// counted, then treated by the hook's policy: "ignore" goes on as if the
// hook had said continue, "block" vetoes.
package hooks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/nanobot-go/nanobot/agent"
	"github.com/nanobot-go/nanobot/configs"
	"github.com/nanobot-go/nanobot/internal/redact"
	"github.com/nanobot-go/nanobot/tools/sandbox"
)

// Options are what a Set needs besides the hooks' config.
type Options struct {
	// Workspace is the program hooks' working folder, writable to them;
	// a relative command path is taken from it.
	Workspace string
	// Sandbox confines program hooks like exec's commands
	// (tools.exec.sandbox); "" is sandbox.ModeAuto.
	Sandbox sandbox.Mode
	// Redact masks the gateway's secrets in everything sent to a hook
	// and in the log; nil: none.
	Redact *redact.Redactor
	// Client sends the HTTP hooks' requests (nil: a plain client; each
	// call has its hook's timeout either way).
	Client *http.Client
	Log    *slog.Logger
}

// Set is the configured hooks, by point. The zero of nothing: New returns
// nil when no hook is enabled, and a nil *Set listens nowhere.
type Set struct {
	byPoint [16][]*hook // by agent.HookPoint; room for points to come
	redact  *redact.Redactor
	log     *slog.Logger
	all     []*hook
}

var _ agent.Hooks = (*Set)(nil)

// caller makes one call of a hook: the request body in, the response body
// out. ctx carries the hook's deadline.
type caller interface {
	call(ctx context.Context, body []byte) ([]byte, error)
}

type hook struct {
	name    string
	points  []string
	timeout time.Duration
	block   bool
	caller  caller
	calls   atomic.Int64
	fails   atomic.Int64
}

// New builds the enabled hooks of cfgs (validated by configs.Validate);
// nil when there are none.
func New(cfgs []configs.HookConfig, opts Options) (*Set, error) {
	log := opts.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Set{redact: opts.Redact, log: log.With("component", "hooks")}
	client := opts.Client
	if client == nil {
		client = &http.Client{}
	}
	for i, c := range cfgs {
		if c.Disabled {
			continue
		}
		h := &hook{name: c.Name, points: c.Points, timeout: c.TimeoutOrDefault(), block: c.Blocks()}
		switch {
		case len(c.Command) > 0:
			argv := append([]string(nil), c.Command...)
			if filepath.Base(argv[0]) != argv[0] && !filepath.IsAbs(argv[0]) {
				argv[0] = filepath.Join(opts.Workspace, argv[0])
			}
			h.caller = &program{argv: argv, dir: opts.Workspace, mode: opts.Sandbox}
		case c.URL != "":
			h.caller = &endpoint{url: c.URL, token: c.Token, client: client}
		default:
			return nil, fmt.Errorf("hooks[%d] (%s): neither command nor url", i, c.Name)
		}
		for _, name := range c.Points {
			p, ok := agent.ParseHookPoint(name)
			if !ok {
				return nil, fmt.Errorf("hooks[%d] (%s): unknown point %q", i, c.Name, name)
			}
			s.byPoint[p] = append(s.byPoint[p], h)
		}
		s.all = append(s.all, h)
	}
	if len(s.all) == 0 {
		return nil, nil
	}
	return s, nil
}

// Has implements agent.Hooks.
func (s *Set) Has(p agent.HookPoint) bool {
	return s != nil && int(p) < len(s.byPoint) && len(s.byPoint[p]) > 0
}

// Run implements agent.Hooks: it asks the hooks of ev.Point in order.
func (s *Set) Run(ctx context.Context, ev agent.HookEvent) agent.HookVerdict {
	var v agent.HookVerdict
	if !s.Has(ev.Point) {
		return v
	}
	for _, h := range s.byPoint[ev.Point] {
		resp, err := s.ask(ctx, h, ev)
		if err != nil {
			h.fails.Add(1)
			s.log.Warn("hook failed", "hook", h.name, "point", ev.Point.String(), "session", ev.Session, "policy", policyName(h.block), "err", s.redact.Error(err))
			if h.block {
				return agent.HookVerdict{Veto: true, Reason: "hook " + h.name + " failed", Data: v.Data}
			}
			continue
		}
		switch resp.Action {
		case ActionVeto:
			return agent.HookVerdict{Veto: true, Reason: resp.Reason, Data: v.Data}
		case ActionModify:
			if len(resp.Data) > 0 {
				merged := maps.Clone(ev.Data)
				if merged == nil {
					merged = map[string]any{}
				}
				maps.Copy(merged, resp.Data)
				ev.Data, v.Data = merged, merged
			}
		}
	}
	return v
}

// ask makes one call of h within its timeout.
func (s *Set) ask(ctx context.Context, h *hook, ev agent.HookEvent) (Response, error) {
	h.calls.Add(1)
	body, err := json.Marshal(Request{
		Version: Version, Hook: h.name, Point: ev.Point.String(), Session: ev.Session,
		Channel: ev.Channel, Chat: ev.Chat, Sender: ev.Sender, Data: ev.Data,
	})
	if err != nil {
		return Response{}, fmt.Errorf("encode request: %w", err)
	}
	if s.redact != nil {
		// Secrets are masked in the JSON text: every value that holds
		// one, wherever the point put it.
		body = []byte(s.redact.Secrets(string(body)))
	}
	callCtx, cancel := context.WithTimeout(ctx, h.timeout)
	defer cancel()
	out, err := h.caller.call(callCtx, body)
	if err != nil {
		if errors.Is(callCtx.Err(), context.DeadlineExceeded) && ctx.Err() == nil {
			return Response{}, fmt.Errorf("timed out after %s: %w", h.timeout, err)
		}
		return Response{}, err
	}
	return decodeResponse(out)
}

func policyName(block bool) string {
	if block {
		return configs.HookBlock
	}
	return configs.HookIgnore
}

// Stat is one hook's calls and failures since start.
type Stat struct {
	Name string `json:"name"`
	// Kind is "program" or "http".
	Kind   string   `json:"kind"`
	Points []string `json:"points"`
	// OnFailure is "ignore" or "block".
	OnFailure string `json:"onFailure"`
	Calls     int64  `json:"calls"`
	Failures  int64  `json:"failures"`
}

// Stats lists the hooks with their counts, in config order.
func (s *Set) Stats() []Stat {
	if s == nil {
		return nil
	}
	out := make([]Stat, 0, len(s.all))
	for _, h := range s.all {
		kind, policy := "program", "ignore"
		if _, ok := h.caller.(*endpoint); ok {
			kind = "http"
		}
		if h.block {
			policy = "block"
		}
		out = append(out, Stat{Name: h.name, Kind: kind, Points: h.points, OnFailure: policy, Calls: h.calls.Load(), Failures: h.fails.Load()})
	}
	return out
}
