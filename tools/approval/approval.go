// Package approval asks the owner before the agent does something risky
// (tools.exec.approval): a tool calls Broker.Ask with what it is about to
// do and why that is risky; the broker tells the owner (a message with
// buttons in the chat the turn belongs to, and the workbench's list of
// pending requests) and waits for an answer — allow once, allow always,
// deny — from an admin, given with Broker.Answer. No answer within the
// timeout, the turn being cancelled or the gateway stopping all mean deny.
// "Allow always" remembers the exact action as a pattern (Remember is
// called to persist it in the config) so the same action runs unasked
// from then on. Every request and every outcome is written to an audit
// log.
//
// Concurrency: a Broker is safe for concurrent use; Ask blocks its caller
// (the tool call) and nobody else. Notify and Remember are called without
// the broker's lock held.
package approval

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nanobot-go/nanobot/bus"
)

// Mode is a tool's approval setting.
type Mode string

// Modes.
const (
	// Off runs every action unasked (the default).
	Off Mode = "off"
	// Risky asks for actions the tool classifies as risky.
	Risky Mode = "risky"
	// Always asks for every action.
	Always Mode = "always"
)

// ParseMode reads a configured mode ("" is Off).
func ParseMode(s string) (Mode, error) {
	switch m := Mode(strings.ToLower(strings.TrimSpace(s))); m {
	case "", Off:
		return Off, nil
	case Risky, Always:
		return m, nil
	}
	return "", fmt.Errorf("approval %q: want off, risky or always", s)
}

// Decision is the owner's answer.
type Decision int

// Decisions. The zero value denies.
const (
	Deny Decision = iota
	AllowOnce
	AllowAlways
)

func (d Decision) String() string {
	switch d {
	case AllowOnce:
		return "allowed once"
	case AllowAlways:
		return "allowed always"
	}
	return "denied"
}

// Request is one action waiting for the owner.
type Request struct {
	// ID is short and unguessable, set by Ask: what /approve names.
	ID string `json:"id"`
	// Tool is the tool asking ("exec").
	Tool string `json:"tool"`
	// Action is what will run (the command line), as the owner sees it.
	Action string `json:"action"`
	// Reasons say why it is risky ("network access", ...); empty when the
	// tool asks for everything.
	Reasons []string `json:"reasons,omitempty"`
	// Channel, ChatID and SessionKey are the conversation the turn belongs
	// to: the request is posted there.
	Channel    string `json:"channel,omitempty"`
	ChatID     string `json:"chatId,omitempty"`
	SessionKey string `json:"sessionKey,omitempty"`
	// Sender is who the turn answers (channel:id form as in the logs).
	Sender string `json:"sender,omitempty"`
	// Asked is when the request was made, Expires when it counts as denied.
	Asked   time.Time `json:"asked"`
	Expires time.Time `json:"expires"`
}

// Errors of Answer.
var (
	ErrUnknown = errors.New("no pending approval with that id (it may have been answered or timed out)")
)

// Options configure a Broker.
type Options struct {
	// Timeout is how long a request waits for an answer (default 5 min).
	Timeout time.Duration
	// Approved are patterns (regular expressions over the whole action,
	// per tool: "exec" -> ...) that run unasked: tools.exec.approvedCommands.
	Approved map[string][]string
	// Remember persists a pattern added by "allow always" (nil: it lasts
	// until restart). It is called outside the broker's lock.
	Remember func(tool, pattern string) error
	// Audit receives every request and outcome (nil: only the log).
	Audit *Audit
	// Redact masks secrets in what the audit log records and Pending
	// shows (nil: none): a command line may carry a key the model was
	// given.
	Redact func(string) string
	// Logger (default slog.Default()).
	Logger *slog.Logger
	// Now is the clock (tests).
	Now func() time.Time
}

// DefaultTimeout is how long the owner has to answer.
const DefaultTimeout = 5 * time.Minute

// Broker holds the pending requests.
type Broker struct {
	opts Options
	log  *slog.Logger

	mu       sync.Mutex
	notify   func(context.Context, bus.Outbound) error
	pending  map[string]*pending
	approved map[string][]*regexp.Regexp
}

type pending struct {
	req    Request
	answer chan Decision // buffered 1; written once under mu
}

// New returns a broker. Bad patterns in Approved are an error.
func New(opts Options) (*Broker, error) {
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	b := &Broker{opts: opts, log: log.With("component", "approval"), pending: map[string]*pending{}, approved: map[string][]*regexp.Regexp{}}
	for tool, pats := range opts.Approved {
		if err := b.SetApproved(tool, pats); err != nil {
			return nil, err
		}
	}
	return b, nil
}

// SetApproved replaces tool's remembered patterns (the config was
// reloaded). On a bad pattern nothing changes.
func (b *Broker) SetApproved(tool string, patterns []string) error {
	res := make([]*regexp.Regexp, 0, len(patterns))
	for _, p := range patterns {
		re, err := regexp.Compile(p)
		if err != nil {
			return fmt.Errorf("approved pattern %q for %s: %w", p, tool, err)
		}
		res = append(res, re)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.approved[tool] = res
	return nil
}

// SetNotifier sets how requests reach a chat: the gateway publishes the
// message on its bus. Until it is set (and for requests without a chat)
// requests are visible in Pending only.
func (b *Broker) SetNotifier(notify func(context.Context, bus.Outbound) error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.notify = notify
}

// Approved reports whether tool's action matches a remembered pattern.
func (b *Broker) Approved(tool, action string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, re := range b.approved[tool] {
		if re.MatchString(action) {
			return true
		}
	}
	return false
}

// Ask posts req and waits for the owner's answer, the timeout or ctx. It
// returns AllowOnce at once for an action a remembered pattern covers. A
// request nobody answers is denied; the error says why (it is nil for an
// explicit answer).
func (b *Broker) Ask(ctx context.Context, req Request) (Decision, error) {
	if b.Approved(req.Tool, req.Action) {
		b.record(req, "approved by pattern", "")
		return AllowOnce, nil
	}
	id, err := newID()
	if err != nil {
		return Deny, err
	}
	now := b.opts.Now()
	req.ID, req.Asked, req.Expires = id, now, now.Add(b.opts.Timeout)
	p := &pending{req: req, answer: make(chan Decision, 1)}
	b.mu.Lock()
	b.pending[id] = p
	notify := b.notify
	b.mu.Unlock()
	defer b.drop(id)

	b.record(req, "asked", "")
	b.log.Info("approval requested", "id", id, "tool", req.Tool, "reasons", req.Reasons, "session", req.SessionKey)
	if notify != nil && req.Channel != "" && req.ChatID != "" {
		if err := notify(ctx, message(req)); err != nil {
			b.log.Warn("approval request not delivered to the chat; it waits in the workbench", "id", id, "err", err)
		}
	}
	timer := time.NewTimer(b.opts.Timeout)
	defer timer.Stop()
	select {
	case d := <-p.answer:
		return d, nil
	case <-timer.C:
		b.record(req, "timed out", "")
		return Deny, fmt.Errorf("no answer from the owner within %s", b.opts.Timeout)
	case <-ctx.Done():
		b.record(req, "cancelled", "")
		return Deny, ctx.Err()
	}
}

// Answer gives the owner's decision on request id; by names who answered
// (for the audit log). "Allow always" remembers the action as a pattern
// first (a pattern that cannot be persisted still counts until restart;
// the error says so, and the request is allowed anyway).
func (b *Broker) Answer(id string, d Decision, by string) (Request, error) {
	b.mu.Lock()
	p, ok := b.pending[strings.TrimSpace(id)]
	if ok {
		delete(b.pending, p.req.ID)
	}
	var pattern string
	if ok && d == AllowAlways {
		pattern = "^" + regexp.QuoteMeta(p.req.Action) + "$"
		b.approved[p.req.Tool] = append(b.approved[p.req.Tool], regexp.MustCompile(pattern))
	}
	b.mu.Unlock()
	if !ok {
		return Request{}, ErrUnknown
	}
	p.answer <- d // buffered, and only the one who deleted it writes
	b.record(p.req, d.String(), by)
	b.log.Info("approval answered", "id", id, "decision", d.String(), "by", by)
	if pattern != "" && b.opts.Remember != nil {
		if err := b.opts.Remember(p.req.Tool, pattern); err != nil {
			b.log.Warn("could not save the approved pattern; it lasts until restart", "pattern", pattern, "err", err)
			return p.req, fmt.Errorf("allowed, but the pattern was not saved to the config (it lasts until restart): %w", err)
		}
	}
	return p.req, nil
}

// Pending lists the requests waiting, oldest first, their actions masked
// like the audit log's.
func (b *Broker) Pending() []Request {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]Request, 0, len(b.pending))
	for _, p := range b.pending {
		r := p.req
		if b.opts.Redact != nil {
			r.Action = b.opts.Redact(r.Action)
		}
		out = append(out, r)
	}
	slices.SortFunc(out, func(x, y Request) int { return x.Asked.Compare(y.Asked) })
	return out
}

func (b *Broker) drop(id string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.pending, id)
}

func (b *Broker) record(req Request, outcome, by string) {
	if b.opts.Audit == nil {
		return
	}
	action := req.Action
	if b.opts.Redact != nil {
		action = b.opts.Redact(action)
	}
	if err := b.opts.Audit.Append(Entry{Time: b.opts.Now(), ID: req.ID, Tool: req.Tool, Action: action, Reasons: req.Reasons,
		SessionKey: req.SessionKey, Sender: req.Sender, Outcome: outcome, By: by}); err != nil {
		b.log.Warn("approval audit log not written", "err", err)
	}
}

// idAlphabet leaves out letters that read alike.
const idAlphabet = "abcdefghjkmnpqrstuvwxyz23456789"

// newID returns 8 characters from idAlphabet (about 40 bits): short enough
// to type, too many to guess within a request's lifetime.
func newID() (string, error) {
	var raw [8]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return "", fmt.Errorf("approval id: %w", err)
	}
	out := make([]byte, len(raw))
	for i, c := range raw {
		out[i] = idAlphabet[int(c)%len(idAlphabet)]
	}
	return string(out), nil
}
