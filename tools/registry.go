package tools

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"runtime/debug"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/nanobot-go/nanobot/internal/redact"
)

// RetryHint is what the agent appends to every failed tool result but a
// refusal (RefusedError) so the model changes strategy instead of
// repeating the call. Errors returned by Registry.Execute never contain it.
const RetryHint = "[Analyze the error above and try a different approach.]"

// RefusedError is a tool error that is a refusal, not a failure: the owner
// said no, or a guard refused the call. The model is told not to try
// another way, so RetryHint ("try a different approach") does not follow it.
type RefusedError struct{ Msg string }

func (e *RefusedError) Error() string { return e.Msg }

// Refused returns a RefusedError with the message format builds.
func Refused(format string, args ...any) error {
	return &RefusedError{Msg: fmt.Sprintf(format, args...)}
}

// ErrUnknownTool is wrapped by Execute's error for a name that is not
// registered (or is disabled).
var ErrUnknownTool = errors.New("unknown tool")

// ArgumentError reports every problem with a call's arguments at once, on
// one line: "invalid arguments for exec: user.age: want integer, got string;
// count: want <= 10, got 12".
type ArgumentError struct {
	Tool     string
	Problems []ValidationError
}

func (e *ArgumentError) Error() string {
	parts := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		parts[i] = p.String()
	}
	return fmt.Sprintf("invalid arguments for %s: %s", e.Tool, strings.Join(parts, "; "))
}

// PanicError is returned when a tool panicked; the turn goes on.
type PanicError struct {
	Tool  string
	Value any
}

func (e *PanicError) Error() string {
	return fmt.Sprintf("tool %s failed with an internal error: %v", e.Tool, e.Value)
}

// nameRule is the function-name rule every provider accepts; nameChars and
// a length check implement it (a bounded repeat in the pattern would
// compile to 64 copies of the class, held from start-up).
const nameRule = `^[a-zA-Z0-9_-]{1,64}$`

var nameChars = regexp.MustCompile(`^[a-zA-Z0-9_-]+$`)

// Registry holds the tools offered to the model, in registration order. It
// is safe for concurrent use: tools may be registered (MCP servers connect
// late) while calls execute.
type Registry struct {
	mu       sync.RWMutex
	entries  map[string]*entry
	order    []string
	disabled map[string]bool
	log      *slog.Logger
	redact   *redact.Redactor
}

type entry struct {
	tool   Tool
	params map[string]any
	// schema compiles the parameter schema once, at registration or at
	// the first call (RegisterOwn).
	schema func() (*Schema, error)
}

// Option configures a Registry.
type Option func(*Registry)

// WithLogger sets the logger (default: slog.Default()).
func WithLogger(l *slog.Logger) Option {
	return func(r *Registry) {
		if l != nil {
			r.log = l
		}
	}
}

// WithDisabled switches tools off by name: Register skips them, so they are
// never offered to the model, and calling one says it is disabled.
func WithDisabled(disabled map[string]bool) Option {
	return func(r *Registry) {
		for name, off := range disabled {
			if off {
				r.disabled[name] = true
			}
		}
	}
}

// WithRedactor removes r's secrets (the configured keys and tokens learnt at
// run time) from every result and error a call returns, before it reaches
// the model, the session or a reply: `echo $KEY` through exec shows
// [REDACTED]. Token shapes are left alone (file contents keep their
// examples); nil redacts nothing.
func WithRedactor(r *redact.Redactor) Option {
	return func(reg *Registry) { reg.redact = r }
}

// NewRegistry returns an empty registry.
func NewRegistry(opts ...Option) *Registry {
	r := &Registry{entries: map[string]*entry{}, disabled: map[string]bool{}, log: slog.Default()}
	for _, o := range opts {
		o(r)
	}
	r.log = r.log.With("component", "tools")
	return r
}

// Register adds a tool. It fails on an invalid or duplicate name and on a
// parameter schema that does not compile. A disabled tool is skipped
// (nil error).
func (r *Registry) Register(t Tool) error { return r.register(t, false) }

// RegisterOwn adds one of the program's own tools. Their schemas are fixed
// in the code, and a test compiles every one of them, so the compile waits
// for the tool's first call: start-up, and the first reply after it, do
// not pay for it (about 5 ms for the built-ins). Tools from outside (MCP
// servers) go through Register.
func (r *Registry) RegisterOwn(t Tool) error { return r.register(t, true) }

func (r *Registry) register(t Tool, later bool) error {
	name := t.Name()
	if len(name) > 64 || !nameChars.MatchString(name) {
		return fmt.Errorf("tools: register %q: name must match %s", name, nameRule)
	}
	r.mu.RLock()
	off := r.disabled[name]
	r.mu.RUnlock()
	if off {
		r.log.Debug("tool disabled by configuration", "tool", name)
		return nil
	}
	params := t.Parameters()
	if params == nil {
		params = map[string]any{"type": "object", "properties": map[string]any{}}
	}
	compile := sync.OnceValues(func() (*Schema, error) { return CompileSchema(params) })
	if !later {
		if _, err := compile(); err != nil {
			return fmt.Errorf("tools: register %s: %w", name, err)
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := r.entries[name]; dup {
		return fmt.Errorf("tools: register %s: already registered", name)
	}
	r.entries[name] = &entry{tool: t, params: params, schema: compile}
	r.order = append(r.order, name)
	return nil
}

// Unregister removes a tool; it reports whether the tool was there.
func (r *Registry) Unregister(name string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.entries[name]; !ok {
		return false
	}
	delete(r.entries, name)
	for i, n := range r.order {
		if n == name {
			r.order = append(r.order[:i:i], r.order[i+1:]...)
			break
		}
	}
	return true
}

// Get returns the tool registered under name.
func (r *Registry) Get(name string) (Tool, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	e, ok := r.entries[name]
	if !ok {
		return nil, false
	}
	return e.tool, true
}

// Names returns the registered names in registration order.
func (r *Registry) Names() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return append([]string(nil), r.order...)
}

// Definitions describes the tools to the provider, in registration order
// (stable, so the prompt prefix stays cacheable). Parameters maps are the
// tools' own and must not be modified.
func (r *Registry) Definitions() []Definition {
	r.mu.RLock()
	defer r.mu.RUnlock()
	defs := make([]Definition, 0, len(r.order))
	for _, name := range r.order {
		e := r.entries[name]
		defs = append(defs, Definition{Name: name, Description: e.tool.Description(), Parameters: e.params})
	}
	return defs
}

// Without returns a new registry holding the same tools minus the named
// ones (sub-agents get one without message and spawn).
func (r *Registry) Without(names ...string) *Registry {
	drop := map[string]bool{}
	for _, n := range names {
		drop[n] = true
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := &Registry{entries: map[string]*entry{}, disabled: map[string]bool{}, log: r.log, redact: r.redact}
	for n := range r.disabled {
		out.disabled[n] = true
	}
	for _, name := range r.order {
		if drop[name] {
			continue
		}
		out.entries[name] = r.entries[name]
		out.order = append(out.order, name)
	}
	return out
}

// Execute runs one call: look up, Cast, Validate, then the tool's Execute.
// Every failure is an error meant for the model (without RetryHint):
// unknown names list the available tools, invalid arguments yield one
// *ArgumentError listing every problem, and a panicking tool yields a
// *PanicError instead of crashing the turn.
func (r *Registry) Execute(ctx context.Context, name string, args map[string]any) (Result, error) {
	r.mu.RLock()
	e, ok := r.entries[name]
	disabled := r.disabled[name]
	available := append([]string(nil), r.order...)
	r.mu.RUnlock()
	if !ok {
		sort.Strings(available)
		list := strings.Join(available, ", ")
		if list == "" {
			list = "(none)"
		}
		if disabled {
			return Result{}, fmt.Errorf("%w %q: it is disabled in this deployment; available tools: %s", ErrUnknownTool, name, list)
		}
		return Result{}, fmt.Errorf("%w %q; available tools: %s", ErrUnknownTool, name, list)
	}
	if err := ctx.Err(); err != nil {
		return Result{}, fmt.Errorf("%s not run: %w", name, err)
	}
	schema, err := e.schema()
	if err != nil {
		return Result{}, fmt.Errorf("%s not run: its parameter schema is invalid: %w", name, err)
	}
	cast := Cast(e.params, args)
	if problems := schema.Validate(cast); len(problems) > 0 {
		return Result{}, &ArgumentError{Tool: name, Problems: problems}
	}
	start := time.Now()
	res, err := r.run(ctx, e.tool, cast)
	r.log.Debug("tool call", "tool", name, "duration", time.Since(start), "failed", err != nil)
	if r.redact != nil {
		res.Content = r.redact.Secrets(res.Content)
		if err != nil {
			if msg := r.redact.Secrets(err.Error()); msg != err.Error() {
				err = &redactedError{msg: msg, err: err}
			}
		}
	}
	return res, err
}

// redactedError is a tool error whose message had a secret in it. It
// still unwraps to the original, so callers can branch on it (errors.Is,
// errors.As), but prints the redacted message.
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

func (r *Registry) run(ctx context.Context, t Tool, args map[string]any) (res Result, err error) {
	defer func() {
		if p := recover(); p != nil {
			r.log.Error("tool panicked", "tool", t.Name(), "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
			res, err = Result{}, &PanicError{Tool: t.Name(), Value: p}
		}
	}()
	return t.Execute(ctx, args)
}

// Filter returns the tools whose names are not disabled, keeping order; use
// it where tools are collected before a registry exists.
func Filter(ts []Tool, disabled map[string]bool) []Tool {
	out := make([]Tool, 0, len(ts))
	for _, t := range ts {
		if !disabled[t.Name()] {
			out = append(out, t)
		}
	}
	return out
}
