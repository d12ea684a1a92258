package tools

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"fmt"

	"github.com/nanobot-go/nanobot/internal/redact"
)

// fakeTool records the arguments it is called with.
type fakeTool struct {
	name   string
	params map[string]any
	exec   func(ctx context.Context, args map[string]any) (Result, error)

	mu   sync.Mutex
	seen []map[string]any
}

func (f *fakeTool) Name() string               { return f.name }
func (f *fakeTool) Description() string        { return "fake " + f.name }
func (f *fakeTool) Parameters() map[string]any { return f.params }
func (f *fakeTool) Execute(ctx context.Context, args map[string]any) (Result, error) {
	f.mu.Lock()
	f.seen = append(f.seen, args)
	f.mu.Unlock()
	if f.exec != nil {
		return f.exec(ctx, args)
	}
	return Result{Content: "ok"}, nil
}

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func newFake(name string) *fakeTool {
	return &fakeTool{name: name, params: map[string]any{
		"type": "object",
		"properties": map[string]any{
			"n":    map[string]any{"type": "integer", "minimum": 1},
			"user": map[string]any{"type": "object", "properties": map[string]any{"age": map[string]any{"type": "integer"}}},
		},
		"required": []any{"n"},
	}}
}

func TestRegistryOrderAndLookup(t *testing.T) {
	r := NewRegistry(WithLogger(quietLogger()))
	for _, n := range []string{"zeta", "alpha", "mid"} {
		if err := r.Register(newFake(n)); err != nil {
			t.Fatalf("Register(%s): %v", n, err)
		}
	}
	if got, want := r.Names(), []string{"zeta", "alpha", "mid"}; !cmp.Equal(got, want) {
		t.Errorf("Names() = %v, want %v", got, want)
	}
	var defNames []string
	for _, d := range r.Definitions() {
		defNames = append(defNames, d.Name)
		if d.Description != "fake "+d.Name || d.Parameters["type"] != "object" {
			t.Errorf("definition %+v incomplete", d)
		}
	}
	if want := []string{"zeta", "alpha", "mid"}; !cmp.Equal(defNames, want) {
		t.Errorf("Definitions() order = %v, want %v", defNames, want)
	}
	if _, ok := r.Get("alpha"); !ok {
		t.Error("Get(alpha) not found")
	}
	if !r.Unregister("alpha") || r.Unregister("alpha") {
		t.Error("Unregister(alpha) twice: want true then false")
	}
	if got, want := r.Names(), []string{"zeta", "mid"}; !cmp.Equal(got, want) {
		t.Errorf("Names() after Unregister = %v, want %v", got, want)
	}
	sub := r.Without("mid")
	if got := sub.Names(); !cmp.Equal(got, []string{"zeta"}) {
		t.Errorf("Without(mid).Names() = %v", got)
	}
	if got := r.Names(); len(got) != 2 {
		t.Errorf("Without changed the original: %v", got)
	}
}

func TestRegisterErrors(t *testing.T) {
	r := NewRegistry(WithLogger(quietLogger()))
	if err := r.Register(newFake("a")); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		tool Tool
		want string
	}{
		{"duplicate", newFake("a"), "already registered"},
		{"bad name", newFake("has space"), "name must match"},
		{"empty name", newFake(""), "name must match"},
		{"name of 65", newFake(strings.Repeat("n", 65)), "name must match"},
		{"bad schema", &fakeTool{name: "b", params: map[string]any{"type": "objekt"}}, "compile schema"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := r.Register(tt.tool)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Register() error = %v, want it to contain %q", err, tt.want)
			}
		})
	}
	if err := r.Register(newFake(strings.Repeat("n", 64))); err != nil {
		t.Errorf("name of 64: %v", err)
	}
	if err := r.Register(&fakeTool{name: "noparams"}); err != nil {
		t.Errorf("nil Parameters: %v", err)
	}
}

func TestExecute(t *testing.T) {
	ctx := context.Background()
	r := NewRegistry(WithLogger(quietLogger()), WithDisabled(map[string]bool{"exec": true, "kept": false}))
	good := newFake("good")
	boom := &fakeTool{name: "boom", exec: func(context.Context, map[string]any) (Result, error) { panic("kaboom") }}
	failing := &fakeTool{name: "failing", exec: func(context.Context, map[string]any) (Result, error) {
		return Result{}, errors.New("disk full")
	}}
	for _, tool := range []Tool{good, boom, failing, newFake("exec"), newFake("kept")} {
		if err := r.Register(tool); err != nil {
			t.Fatal(err)
		}
	}
	if got := r.Names(); !cmp.Equal(got, []string{"good", "boom", "failing", "kept"}) {
		t.Errorf("disabled tool registered: %v", got)
	}

	t.Run("cast then execute", func(t *testing.T) {
		res, err := r.Execute(ctx, "good", map[string]any{"n": "3", "user": map[string]any{"age": "7"}})
		if err != nil || res.Content != "ok" {
			t.Fatalf("Execute() = %v, %v", res, err)
		}
		want := map[string]any{"n": 3, "user": map[string]any{"age": 7}}
		if diff := cmp.Diff(want, good.seen[len(good.seen)-1]); diff != "" {
			t.Errorf("tool saw (-want +got):\n%s", diff)
		}
	})
	t.Run("all problems in one error", func(t *testing.T) {
		_, err := r.Execute(ctx, "good", map[string]any{"n": 0, "user": map[string]any{"age": "old"}})
		var aerr *ArgumentError
		if !errors.As(err, &aerr) {
			t.Fatalf("error %v is not an *ArgumentError", err)
		}
		want := "invalid arguments for good: n: want >= 1, got 0; user.age: want integer, got string"
		if err.Error() != want {
			t.Errorf("error text:\n%s\nwant:\n%s", err, want)
		}
		if strings.Contains(err.Error(), RetryHint) {
			t.Error("error must not contain the retry hint")
		}
	})
	t.Run("nil args", func(t *testing.T) {
		_, err := r.Execute(ctx, "good", nil)
		if err == nil || !strings.Contains(err.Error(), "n: missing required property") {
			t.Errorf("Execute(nil args) error = %v", err)
		}
	})
	t.Run("unknown tool lists available", func(t *testing.T) {
		_, err := r.Execute(ctx, "nope", nil)
		if !errors.Is(err, ErrUnknownTool) {
			t.Fatalf("error %v is not ErrUnknownTool", err)
		}
		if want := `unknown tool "nope"; available tools: boom, failing, good, kept`; err.Error() != want {
			t.Errorf("error = %q, want %q", err, want)
		}
	})
	t.Run("disabled tool says so", func(t *testing.T) {
		_, err := r.Execute(ctx, "exec", map[string]any{"n": 1})
		if !errors.Is(err, ErrUnknownTool) || !strings.Contains(err.Error(), "disabled") {
			t.Errorf("error = %v, want a disabled unknown-tool error", err)
		}
	})
	t.Run("panic recovered", func(t *testing.T) {
		_, err := r.Execute(ctx, "boom", nil)
		var perr *PanicError
		if !errors.As(err, &perr) || !strings.Contains(err.Error(), "kaboom") {
			t.Errorf("error = %v, want a *PanicError mentioning kaboom", err)
		}
	})
	t.Run("tool error passed through", func(t *testing.T) {
		_, err := r.Execute(ctx, "failing", nil)
		if err == nil || err.Error() != "disk full" {
			t.Errorf("error = %v, want disk full", err)
		}
	})
	t.Run("cancelled context", func(t *testing.T) {
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		_, err := r.Execute(cctx, "good", map[string]any{"n": 1})
		if !errors.Is(err, context.Canceled) {
			t.Errorf("error = %v, want context.Canceled", err)
		}
	})
}

func TestExecuteConcurrentWithRegister(t *testing.T) {
	r := NewRegistry(WithLogger(quietLogger()))
	if err := r.Register(newFake("base")); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for j := range 20 {
				if _, err := r.Execute(context.Background(), "base", map[string]any{"n": j + 1}); err != nil {
					t.Error(err)
				}
				_ = r.Definitions()
			}
		})
		wg.Go(func() {
			_ = r.Register(newFake("t" + string(rune('a'+i))))
		})
	}
	wg.Wait()
	if got := len(r.Names()); got != 9 {
		t.Errorf("len(Names()) = %d, want 9", got)
	}
}

func TestFilter(t *testing.T) {
	ts := []Tool{newFake("a"), newFake("b"), newFake("c")}
	var names []string
	for _, tool := range Filter(ts, map[string]bool{"b": true, "c": false}) {
		names = append(names, tool.Name())
	}
	if !cmp.Equal(names, []string{"a", "c"}) {
		t.Errorf("Filter() = %v, want [a c]", names)
	}
}

func TestRegistryRedactsResultsAndErrors(t *testing.T) {
	const key = "tok-redact-me-42"
	red := redact.New()
	r := NewRegistry(WithLogger(quietLogger()), WithRedactor(red))
	leak := newFake("leak")
	errSentinel := errors.New("sentinel")
	leak.exec = func(_ context.Context, args map[string]any) (Result, error) {
		if args["n"] == 2 {
			return Result{}, fmt.Errorf("call with %s failed: %w", key, errSentinel)
		}
		return Result{Content: "token=" + key}, nil
	}
	if err := r.Register(leak); err != nil {
		t.Fatal(err)
	}
	// A token learnt at run time (after the registry was built) counts.
	red.Add(key)
	res, err := r.Execute(context.Background(), "leak", map[string]any{"n": 1})
	if err != nil || res.Content != "token="+redact.Mask {
		t.Errorf("result %q, %v; want the token masked", res.Content, err)
	}
	_, err = r.Without("other").Execute(context.Background(), "leak", map[string]any{"n": 2})
	if err == nil || strings.Contains(err.Error(), key) || !strings.Contains(err.Error(), redact.Mask) {
		t.Errorf("error %v; want the token masked", err)
	}
	if !errors.Is(err, errSentinel) {
		t.Errorf("redacted error %v no longer unwraps to the tool's error", err)
	}
}

// TestRegisterOwnCompilesAtFirstCall: Register refuses a schema that does
// not compile; RegisterOwn takes it and the first call says why it cannot
// run, without running the tool; a valid one validates as with Register.
func TestRegisterOwnCompilesAtFirstCall(t *testing.T) {
	bad := &fakeTool{name: "bad", params: map[string]any{"type": "object", "properties": map[string]any{"n": map[string]any{"type": "integr"}}}}
	r := NewRegistry(WithLogger(quietLogger()))
	if err := r.Register(bad); err == nil {
		t.Fatal("Register took a schema that does not compile")
	}
	if err := r.RegisterOwn(bad); err != nil {
		t.Fatalf("RegisterOwn: %v", err)
	}
	_, err := r.Execute(context.Background(), "bad", map[string]any{"n": 1})
	if err == nil || !strings.Contains(err.Error(), "schema is invalid") {
		t.Errorf("call with a bad schema: %v", err)
	}
	if len(bad.seen) != 0 {
		t.Error("the tool ran although its schema is invalid")
	}
	good := newFake("good")
	if err := r.RegisterOwn(good); err != nil {
		t.Fatal(err)
	}
	var argErr *ArgumentError
	if _, err := r.Execute(context.Background(), "good", map[string]any{"n": 0}); !errors.As(err, &argErr) {
		t.Errorf("n below its minimum: %v, want an ArgumentError", err)
	}
	if _, err := r.Execute(context.Background(), "good", map[string]any{"n": 2}); err != nil {
		t.Errorf("valid call: %v", err)
	}
}
