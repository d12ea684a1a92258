package memory

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/nanobot-go/nanobot/agent/session"
	"github.com/nanobot-go/nanobot/providers"
)

func TestConsolidatesUntilUnderHalfBudget(t *testing.T) {
	ctx := context.Background()
	ws := t.TempDir()
	st := &recordingStore{Store: newStore(t, t.TempDir())}
	p := &fakeProvider{reply: appendingReply(t, "a")}
	c := newConsolidator(t, testOptions(ws, p, st))
	s := load(t, st, "test:1")
	addTurns(t, st, s, 0, 30, 60)

	before := c.EstimatePrompt(s)
	if before <= c.Budget() {
		t.Fatalf("setup: estimate %d not over budget %d", before, c.Budget())
	}
	if err := c.MaybeConsolidate(ctx, s); err != nil {
		t.Fatalf("MaybeConsolidate: %v", err)
	}
	if got, want := c.EstimatePrompt(s), c.Budget()/2; got > want {
		t.Errorf("estimate after = %d, want <= %d (half the budget)", got, want)
	}
	calls := p.calls()
	if calls < 1 || calls > 5 {
		t.Errorf("calls = %d, want 1..5", calls)
	}
	if len(st.cursors) != calls {
		t.Errorf("cursor moves = %d, want one per call (%d)", len(st.cursors), calls)
	}
	prev := 0
	for i, cur := range st.cursors {
		if cur <= prev {
			t.Errorf("cursor %d = %d, want > %d", i, cur, prev)
		}
		if role := s.Messages[cur].Role; role != providers.RoleUser {
			t.Errorf("cursor %d = %d points at a %s message, want a user message (chunks end at user boundaries)", i, cur, role)
		}
		prev = cur
	}
	for i, req := range p.requests() {
		if req.ToolChoice != saveMemoryTool {
			t.Errorf("request %d ToolChoice = %q, want %q", i, req.ToolChoice, saveMemoryTool)
		}
		conv := requestConversation(req)
		// Every tool call in a chunk has its result in the same chunk.
		for n := 0; n < 30; n++ {
			call := strings.Contains(conv, fmt.Sprintf(`exec({"command":"echo %d"})`, n))
			result := strings.Contains(conv, fmt.Sprintf("TOOL exec: result-%d ", n))
			if call != result {
				t.Errorf("request %d: turn %d tool call present=%v but result present=%v", i, n, call, result)
			}
		}
	}
	mem := readFile(t, c.MemoryPath())
	if !strings.Contains(mem, "learned fact a-1") || !strings.Contains(mem, fmt.Sprintf("learned fact a-%d", calls)) {
		t.Errorf("MEMORY.md lacks the facts of rounds 1..%d:\n%s", calls, mem)
	}
	if got := c.MemoryContext(); got != mem {
		t.Errorf("MemoryContext() = %q, want the file %q", got, mem)
	}
	hist := readFile(t, c.HistoryPath())
	if got := strings.Count(hist, "[2026-03-01 10:00] a round "); got != calls {
		t.Errorf("HISTORY.md has %d entries, want %d:\n%s", got, calls, hist)
	}
	if s.Len() != 120 {
		t.Errorf("session has %d messages, want all 120 kept (append-only)", s.Len())
	}
	// Under budget now: another call is a no-op.
	if err := c.MaybeConsolidate(ctx, s); err != nil || p.calls() != calls {
		t.Errorf("second MaybeConsolidate: err %v, calls %d, want nil and still %d", err, p.calls(), calls)
	}
}

func TestUnderBudgetDoesNothing(t *testing.T) {
	st := newStore(t, t.TempDir())
	p := &fakeProvider{reply: appendingReply(t, "a")}
	c := newConsolidator(t, testOptions(t.TempDir(), p, st))
	s := load(t, st, "test:1")
	addTurns(t, st, s, 0, 2, 20)
	if err := c.MaybeConsolidate(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	if p.calls() != 0 || s.LastConsolidated != 0 {
		t.Errorf("calls = %d, cursor = %d, want 0 and 0", p.calls(), s.LastConsolidated)
	}
}

func TestRoundLimit(t *testing.T) {
	st := newStore(t, t.TempDir())
	p := &fakeProvider{reply: appendingReply(t, "a")}
	c := newConsolidator(t, testOptions(t.TempDir(), p, st))
	s := load(t, st, "test:1")
	addTurns(t, st, s, 0, 100, 60) // about 27000 tokens; a chunk holds about 3000
	if err := c.MaybeConsolidate(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	if got := p.calls(); got != 5 {
		t.Errorf("calls = %d, want 5 (the round limit)", got)
	}
	if got := c.EstimatePrompt(s); got <= c.Budget()/2 {
		t.Errorf("estimate = %d, want still over %d (setup must need more than 5 rounds)", got, c.Budget()/2)
	}
	if s.LastConsolidated == 0 {
		t.Error("cursor did not move")
	}
}

func TestRawArchiveAfterFailures(t *testing.T) {
	ctx := context.Background()
	st := newStore(t, t.TempDir())
	p := &fakeProvider{reply: func(context.Context, providers.ChatRequest) (*providers.LLMResponse, error) {
		return nil, errors.New("upstream 503")
	}}
	c := newConsolidator(t, testOptions(t.TempDir(), p, st))
	s := load(t, st, "test:1")
	addTurns(t, st, s, 0, 30, 60)

	for i := 1; i <= 2; i++ {
		err := c.MaybeConsolidate(ctx, s)
		if err == nil || !strings.Contains(err.Error(), "upstream 503") {
			t.Fatalf("attempt %d: err = %v, want the provider error", i, err)
		}
		if s.LastConsolidated != 0 || readFile(t, c.HistoryPath()) != "" {
			t.Fatalf("attempt %d: cursor %d, history %q; want nothing written before the third failure", i, s.LastConsolidated, readFile(t, c.HistoryPath()))
		}
	}
	if err := c.MaybeConsolidate(ctx, s); err != nil {
		t.Fatalf("third attempt: %v, want the raw archive to succeed", err)
	}
	if got := p.calls(); got != 3 {
		t.Errorf("calls = %d, want 3 (no calls after giving up)", got)
	}
	if got, want := c.EstimatePrompt(s), c.Budget()/2; got > want {
		t.Errorf("estimate = %d, want <= %d after raw archiving", got, want)
	}
	hist := readFile(t, c.HistoryPath())
	if !strings.Contains(hist, "[2026-03-01 12:00] [raw archive]") {
		t.Errorf("HISTORY.md has no raw archive header:\n%.300s", hist)
	}
	// Every archived message is there verbatim.
	for _, m := range s.Messages[:s.LastConsolidated] {
		want := m.Content
		if len(m.ToolCalls) > 0 {
			want = m.ToolCalls[0].Function.Arguments
		}
		if !strings.Contains(hist, want) {
			t.Errorf("HISTORY.md lacks archived message %q", want)
		}
	}
	if readFile(t, c.MemoryPath()) != "" {
		t.Error("MEMORY.md was written by a raw archive")
	}
}

func TestBadResponsesCountAsFailures(t *testing.T) {
	tests := []struct {
		name string
		resp *providers.LLMResponse
		mem  string
	}{
		{"text instead of a tool call", &providers.LLMResponse{Content: "Sure!", FinishReason: "stop"}, ""},
		{"undecodable arguments", &providers.LLMResponse{ToolCalls: []providers.ToolCallRequest{{Name: saveMemoryTool, ArgumentsError: "unexpected end of JSON"}}}, ""},
		{"empty history entry", saveCall(" ", "# Memory\n"), ""},
		{"memory update erases memory", saveCall("[2026-03-01 10:00] x", ""), "## Facts\n- keep me\n"},
		{"another tool", &providers.LLMResponse{ToolCalls: []providers.ToolCallRequest{{Name: "exec", Arguments: map[string]any{}}}}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ws := t.TempDir()
			if tt.mem != "" {
				writeMemoryFile(t, ws, tt.mem)
			}
			st := newStore(t, t.TempDir())
			p := &fakeProvider{reply: func(context.Context, providers.ChatRequest) (*providers.LLMResponse, error) { return tt.resp, nil }}
			c := newConsolidator(t, testOptions(ws, p, st))
			s := load(t, st, "test:1")
			addTurns(t, st, s, 0, 30, 60)
			if err := c.MaybeConsolidate(context.Background(), s); err == nil {
				t.Fatal("MaybeConsolidate succeeded, want an error")
			}
			if s.LastConsolidated != 0 {
				t.Errorf("cursor = %d, want 0", s.LastConsolidated)
			}
			if tt.mem != "" && readFile(t, c.MemoryPath()) != tt.mem {
				t.Errorf("MEMORY.md changed to %q", readFile(t, c.MemoryPath()))
			}
		})
	}
}

// A shared lock lost while the model answers stops the consolidation
// before anything is written, and is not counted as the model's failure
// (no raw archive however often it happens).
func TestLockLostDuringCallWritesNothing(t *testing.T) {
	lockLost := errors.New("lease lost")
	var cancelHeld context.CancelCauseFunc
	releases := 0
	st := newStore(t, t.TempDir())
	p := &fakeProvider{reply: func(context.Context, providers.ChatRequest) (*providers.LLMResponse, error) {
		cancelHeld(lockLost) // another worker may write from now on
		return saveCall("[2026-03-01 10:00] summary.", "# Memory\n- fact\n"), nil
	}}
	opts := testOptions(t.TempDir(), p, st)
	opts.Lock = func(ctx context.Context) (context.Context, func(), error) {
		held, cancel := context.WithCancelCause(ctx)
		cancelHeld = cancel
		return held, func() { releases++; cancel(context.Canceled) }, nil
	}
	c := newConsolidator(t, opts)
	s := load(t, st, "test:1")
	addTurns(t, st, s, 0, 30, 60)
	for i := range 4 {
		err := c.MaybeConsolidate(context.Background(), s)
		if !errors.Is(err, errLockLost) || !errors.Is(err, lockLost) {
			t.Fatalf("attempt %d: err = %v, want the lost lock", i+1, err)
		}
	}
	if s.LastConsolidated != 0 {
		t.Errorf("cursor = %d, want 0", s.LastConsolidated)
	}
	if got := readFile(t, c.MemoryPath()); got != "" {
		t.Errorf("MEMORY.md written after the lock was lost: %q", got)
	}
	if got := readFile(t, c.HistoryPath()); got != "" {
		t.Errorf("HISTORY.md written after the lock was lost: %q", got)
	}
	if releases != 4 {
		t.Errorf("lock released %d times, want 4", releases)
	}
}

func TestCallTimeout(t *testing.T) {
	st := newStore(t, t.TempDir())
	p := &fakeProvider{reply: func(ctx context.Context, _ providers.ChatRequest) (*providers.LLMResponse, error) {
		<-ctx.Done() // a provider that hangs until its deadline
		return nil, ctx.Err()
	}}
	opts := testOptions(t.TempDir(), p, st)
	opts.CallTimeout = 20 * time.Millisecond
	c := newConsolidator(t, opts)
	s := load(t, st, "test:1")
	addTurns(t, st, s, 0, 30, 60)
	err := c.MaybeConsolidate(context.Background(), s)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err = %v, want a deadline error", err)
	}
}

func TestMemoryCap(t *testing.T) {
	var big strings.Builder
	big.WriteString("# Long-term memory\n\n")
	for i := range 10 {
		fmt.Fprintf(&big, "## Topic %d\n%s\n\n", i, words(fmt.Sprintf("topic-%d", i), 100))
	}
	bigMem := big.String()
	const small = "# Long-term memory\n\n## Summary\n- compacted\n"
	tests := []struct {
		name        string
		update      string // what the model returns
		wantMemory  func(t *testing.T, mem string)
		wantMovedTo []string // sections expected in HISTORY.md
	}{
		{
			name:   "model compacts",
			update: small,
			wantMemory: func(t *testing.T, mem string) {
				if mem != small {
					t.Errorf("MEMORY.md = %q, want the compacted one", mem)
				}
			},
		},
		{
			name:   "model ignores the request; oldest sections move out",
			update: bigMem,
			wantMemory: func(t *testing.T, mem string) {
				if got := EstimateText(mem); got > 300 {
					t.Errorf("MEMORY.md is %d tokens, want <= cap 300", got)
				}
				if !strings.HasPrefix(mem, "# Long-term memory") || !strings.Contains(mem, "## Topic 9") {
					t.Errorf("MEMORY.md lost its preamble or newest section:\n%s", mem)
				}
			},
			wantMovedTo: []string{"## Topic 0\n", "## Topic 1\n", "[MEMORY.md overflow]"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ws := t.TempDir()
			writeMemoryFile(t, ws, bigMem)
			st := newStore(t, t.TempDir())
			// The first call returns tt.update; later ones keep the memory
			// they are given, as a model with nothing new to add does.
			p := &fakeProvider{}
			p.reply = func(_ context.Context, req providers.ChatRequest) (*providers.LLMResponse, error) {
				if p.calls() == 1 {
					return saveCall("[2026-03-01 10:00] chat", tt.update), nil
				}
				return saveCall("[2026-03-01 10:00] chat", requestMemory(t, req)), nil
			}
			opts := testOptions(ws, p, st)
			opts.MemoryCapTokens = 300
			opts.ContextWindowTokens = 8000 // room for the big memory
			c := newConsolidator(t, opts)
			s := load(t, st, "test:1")
			addTurns(t, st, s, 0, 40, 60)
			if err := c.MaybeConsolidate(context.Background(), s); err != nil {
				t.Fatal(err)
			}
			if u := p.requests()[0].Messages[1].Content; !strings.Contains(u, "over its limit") {
				t.Errorf("first request does not ask to compact:\n%.400s", u)
			}
			tt.wantMemory(t, readFile(t, c.MemoryPath()))
			hist := readFile(t, c.HistoryPath())
			for _, w := range tt.wantMovedTo {
				if !strings.Contains(hist, w) {
					t.Errorf("HISTORY.md lacks %q", w)
				}
			}
			// Moved sections are verbatim: body text survives.
			if len(tt.wantMovedTo) > 0 && !strings.Contains(hist, words("topic-0", 100)) {
				t.Error("moved section text is not verbatim in HISTORY.md")
			}
		})
	}
}

func TestConcurrentSessions(t *testing.T) {
	ws := t.TempDir()
	st := newStore(t, t.TempDir())
	var inFlight, overlaps atomic.Int32
	var mu sync.Mutex
	rounds := 0
	p := &fakeProvider{}
	p.reply = func(_ context.Context, req providers.ChatRequest) (*providers.LLMResponse, error) {
		if inFlight.Add(1) > 1 {
			overlaps.Add(1)
		}
		defer inFlight.Add(-1)
		mu.Lock()
		rounds++
		n := rounds
		mu.Unlock()
		mem := strings.TrimRight(requestMemory(t, req), "\n")
		mem += fmt.Sprintf("\n\n## Round %d\n- fact %d\n", n, n)
		return saveCall("[2026-03-01 10:00] round", strings.TrimLeft(mem, "\n")), nil
	}
	c := newConsolidator(t, testOptions(ws, p, st))
	const sessions = 4
	var wg sync.WaitGroup
	errs := make([]error, sessions)
	for i := range sessions {
		s := load(t, st, fmt.Sprintf("test:%d", i))
		addTurns(t, st, s, 0, 30, 60)
		wg.Go(func() { errs[i] = c.MaybeConsolidate(context.Background(), s) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("session %d: %v", i, err)
		}
	}
	if overlaps.Load() != 0 {
		t.Errorf("%d consolidation calls overlapped, want them serialized", overlaps.Load())
	}
	mem := readFile(t, c.MemoryPath())
	secs := splitSections(mem)
	var got []string
	for _, s := range secs {
		got = append(got, s.heading)
	}
	var want []string
	for n := 1; n <= rounds; n++ {
		want = append(want, fmt.Sprintf("Round %d", n))
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("MEMORY.md sections (-want +got):\n%s\n%s", diff, mem)
	}
	if hist := readFile(t, c.HistoryPath()); strings.Count(hist, "[2026-03-01 10:00] round\n\n") != rounds {
		t.Errorf("HISTORY.md has %d entries, want %d", strings.Count(hist, "[2026-03-01 10:00] round\n\n"), rounds)
	}
}

func TestRestartResumesFromCursor(t *testing.T) {
	ctx := context.Background()
	ws, dir := t.TempDir(), t.TempDir()
	st := newStore(t, dir)
	p := &fakeProvider{reply: appendingReply(t, "a")}
	c := newConsolidator(t, testOptions(ws, p, st))
	s := load(t, st, "test:1")
	addTurns(t, st, s, 0, 30, 60)
	if err := c.MaybeConsolidate(ctx, s); err != nil {
		t.Fatal(err)
	}
	cursor := s.LastConsolidated

	// A new process: new store and consolidator over the same folders.
	st2 := newStore(t, dir)
	p2 := &fakeProvider{reply: appendingReply(t, "b")}
	c2 := newConsolidator(t, testOptions(ws, p2, st2))
	s2 := load(t, st2, "test:1")
	if s2.LastConsolidated != cursor {
		t.Fatalf("reloaded cursor = %d, want %d", s2.LastConsolidated, cursor)
	}
	if err := c2.MaybeConsolidate(ctx, s2); err != nil || p2.calls() != 0 {
		t.Fatalf("after restart under budget: err %v, calls %d; want no calls", err, p2.calls())
	}
	addTurns(t, st2, s2, 30, 20, 60)
	if err := c2.MaybeConsolidate(ctx, s2); err != nil {
		t.Fatal(err)
	}
	conv := requestConversation(p2.requests()[0])
	first := s2.Messages[cursor].Content
	if !strings.HasPrefix(strings.SplitN(conv, "\n", 2)[0], "[") || !strings.Contains(strings.SplitN(conv, "\n", 2)[0], first) {
		t.Errorf("first chunk after restart starts with %q, want the message at the cursor %q", strings.SplitN(conv, "\n", 2)[0], first)
	}
	if strings.Contains(conv, s2.Messages[cursor-1].Content) {
		t.Error("chunk after restart repeats a consolidated message")
	}
	mem := readFile(t, c2.MemoryPath())
	if !strings.Contains(mem, "learned fact a-1") || !strings.Contains(mem, "learned fact b-1") {
		t.Errorf("MEMORY.md lost facts across the restart:\n%s", mem)
	}
}

func TestArchiveAll(t *testing.T) {
	tests := []struct {
		name    string
		fail    bool
		wantRaw bool
	}{
		{"consolidates everything", false, false},
		{"failure archives the rest raw", true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := newStore(t, t.TempDir())
			p := &fakeProvider{reply: appendingReply(t, "a")}
			if tt.fail {
				p.reply = func(context.Context, providers.ChatRequest) (*providers.LLMResponse, error) {
					return nil, errors.New("down")
				}
			}
			c := newConsolidator(t, testOptions(t.TempDir(), p, st))
			s := load(t, st, "test:1")
			addTurns(t, st, s, 0, 12, 60)
			if err := c.ArchiveAll(context.Background(), s); err != nil {
				t.Fatal(err)
			}
			if s.LastConsolidated != s.Len() {
				t.Errorf("cursor = %d, want %d (everything)", s.LastConsolidated, s.Len())
			}
			hist := readFile(t, c.HistoryPath())
			if got := strings.Contains(hist, "[raw archive]"); got != tt.wantRaw {
				t.Errorf("raw archive in HISTORY.md = %v, want %v", got, tt.wantRaw)
			}
			if tt.fail && p.calls() != 1 {
				t.Errorf("calls = %d, want 1 (give up on the first failure)", p.calls())
			}
			if !strings.Contains(hist, "answer-11") && tt.wantRaw {
				t.Error("last message missing from the raw archive")
			}
			if err := c.ArchiveAll(context.Background(), s); err != nil {
				t.Errorf("second ArchiveAll: %v", err)
			}
		})
	}
}

func TestMemoryContextFollowsFile(t *testing.T) {
	ws := t.TempDir()
	c := newConsolidator(t, testOptions(ws, &fakeProvider{}, newStore(t, t.TempDir())))
	if got := c.MemoryContext(); got != "" {
		t.Errorf("no file: MemoryContext() = %q, want empty", got)
	}
	writeMemoryFile(t, ws, "## A\n- one\n")
	if got := c.MemoryContext(); got != "## A\n- one\n" {
		t.Errorf("MemoryContext() = %q", got)
	}
	writeMemoryFile(t, ws, "## B\n- a longer line\n") // size differs, so seen at once
	if got := c.MemoryContext(); got != "## B\n- a longer line\n" {
		t.Errorf("after edit MemoryContext() = %q", got)
	}
}

func TestNewValidates(t *testing.T) {
	p, st := &fakeProvider{}, newStore(t, t.TempDir())
	tests := []struct {
		name string
		opts Options
	}{
		{"no workspace", Options{Provider: p, Store: st}},
		{"no provider", Options{Workspace: "w", Store: st}},
		{"no store", Options{Workspace: "w", Provider: p}},
		{"window too small", Options{Workspace: "w", Provider: p, Store: st, ContextWindowTokens: 4000, MaxTokens: 4000}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := New(tt.opts); err == nil {
				t.Error("New succeeded, want an error")
			}
		})
	}
}

var _ interface {
	MaybeConsolidate(context.Context, *session.Session) error
	ArchiveAll(context.Context, *session.Session) error
	MemoryContext() string
} = (*Consolidator)(nil)

// TestCompact folds all but the last exchanges into memory on demand,
// whatever the budget, at a user message; a second /compact has nothing
// left; a failed call keeps the history and says so.
func TestCompact(t *testing.T) {
	st := newStore(t, t.TempDir())
	p := &fakeProvider{reply: appendingReply(t, "a")}
	c := newConsolidator(t, testOptions(t.TempDir(), p, st))
	s := load(t, st, "test:1")
	addTurns(t, st, s, 0, 3, 10) // far under the budget
	folded, err := c.Compact(context.Background(), s, 4)
	if err != nil {
		t.Fatal(err)
	}
	if folded == 0 || folded != s.LastConsolidated || s.LastConsolidated > s.Len()-4 || s.Messages[s.LastConsolidated].Role != providers.RoleUser {
		t.Errorf("folded %d, cursor %d of %d (role there %q); want all but the last exchange, ending before a user message",
			folded, s.LastConsolidated, s.Len(), s.Messages[s.LastConsolidated].Role)
	}
	if !strings.Contains(readFile(t, c.HistoryPath()), "a") || p.calls() == 0 {
		t.Error("nothing written to HISTORY.md")
	}
	// The cursor is stored: a fresh load sees it.
	if again := load(t, st, "test:1"); again.LastConsolidated != s.LastConsolidated {
		t.Errorf("stored cursor %d, want %d", again.LastConsolidated, s.LastConsolidated)
	}
	calls := p.calls()
	if n, err := c.Compact(context.Background(), s, 4); err != nil || n != 0 || p.calls() != calls {
		t.Errorf("second compact: folded %d, %v, %d more calls; want nothing", n, err, p.calls()-calls)
	}

	down := &fakeProvider{reply: func(context.Context, providers.ChatRequest) (*providers.LLMResponse, error) {
		return nil, errors.New("down")
	}}
	c2 := newConsolidator(t, testOptions(t.TempDir(), down, st))
	s2 := load(t, st, "test:2")
	addTurns(t, st, s2, 0, 3, 10)
	if n, err := c2.Compact(context.Background(), s2, 2); err == nil || n != 0 || s2.LastConsolidated != 0 {
		t.Errorf("failed compact: folded %d, %v, cursor %d; want an error and the history kept", n, err, s2.LastConsolidated)
	}
	if strings.Contains(readFile(t, c2.HistoryPath()), "[raw archive]") {
		t.Error("a failed /compact archived raw messages")
	}
}
