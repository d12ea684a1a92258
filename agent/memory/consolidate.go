package memory

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/nanobot-go/nanobot/agent/session"
	"github.com/nanobot-go/nanobot/agent/usage"
	"github.com/nanobot-go/nanobot/providers"
)

// CursorStore is what consolidation needs of session storage: moving the
// consolidation cursor. session.Store satisfies it.
type CursorStore interface {
	SetCursor(ctx context.Context, s *session.Session, lastConsolidated int) error
}

// Options configures a Consolidator. Workspace, Provider and Store are
// required; every other field has a default.
type Options struct {
	// Workspace is the folder holding memory/MEMORY.md and memory/HISTORY.md.
	Workspace string
	// Provider answers the consolidation calls. The agent passes one that
	// checks budgets and records each call in the usage ledger; when it
	// refuses a call with a *usage.BudgetError, MaybeConsolidate leaves
	// the history for a later turn and ArchiveAll archives it raw.
	Provider providers.Provider
	// Model is the model of the consolidation calls ("" = provider default).
	Model string
	// ContextWindowTokens is the model's context window (default 65536).
	ContextWindowTokens int
	// MaxTokens is the output reserved for a reply, and the output limit of
	// a consolidation call (default 8192).
	MaxTokens int
	// SafetyMargin is kept free for estimate error (default 5% of the
	// context window, at least 1024).
	SafetyMargin int
	// MemoryCapTokens bounds MEMORY.md (default 8000). Over it, the next
	// consolidation asks the model to compact it; if it is still over, the
	// oldest "## " sections move to HISTORY.md verbatim.
	MemoryCapTokens int
	// Store persists the cursor.
	Store CursorStore
	// Logger (default: discard).
	Logger *slog.Logger
	// Now is the clock (default time.Now).
	Now func() time.Time
	// Location is the timezone of HISTORY.md timestamps (default Local).
	Location *time.Location
	// SystemPrompt returns the current system prompt, to estimate its size
	// (wire ContextBuilder.SystemPrompt). When nil, the system prompt is
	// estimated as MEMORY.md plus 2000 tokens.
	SystemPrompt func() string
	// OverheadTokens is what a request carries besides the system prompt
	// and the history: tool definitions and the coming user message
	// (default 4000).
	OverheadTokens int
	// Lock, when set, is taken around every write of the memory files in
	// addition to the in-process lock: in cluster mode the workers share
	// the workspace volume and this is a lock in NATS, so two workers never
	// write MEMORY.md or HISTORY.md at once. The consolidation call and the
	// writes run under held, which must end when the lock is lost (its
	// lease could not be renewed): nothing is written after that, and the
	// consolidation is tried again on a later turn.
	Lock func(ctx context.Context) (held context.Context, release func(), err error)
	// CallTimeout bounds one consolidation call (default 2 minutes).
	CallTimeout time.Duration
	// MaxRounds bounds the consolidation calls of one trigger (default 5).
	MaxRounds int
	// MaxFailures is how many consecutive failed calls for a session lead to
	// archiving the raw messages instead (default 3).
	MaxFailures int
}

// systemOverheadTokens stands for identity, bootstrap files and skills when
// Options.SystemPrompt is nil.
const systemOverheadTokens = 2000

// consolidationOverheadTokens is the instructions and framing of a
// consolidation call, besides MEMORY.md and the chunk.
const consolidationOverheadTokens = 1000

func (o *Options) setDefaults() {
	if o.ContextWindowTokens <= 0 {
		o.ContextWindowTokens = 65536
	}
	if o.MaxTokens <= 0 {
		o.MaxTokens = 8192
	}
	if o.SafetyMargin <= 0 {
		o.SafetyMargin = max(1024, o.ContextWindowTokens/20)
	}
	if o.MemoryCapTokens <= 0 {
		o.MemoryCapTokens = 8000
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Location == nil {
		o.Location = time.Local
	}
	if o.OverheadTokens <= 0 {
		o.OverheadTokens = 4000
	}
	if o.CallTimeout <= 0 {
		o.CallTimeout = 2 * time.Minute
	}
	if o.MaxRounds <= 0 {
		o.MaxRounds = 5
	}
	if o.MaxFailures <= 0 {
		o.MaxFailures = 3
	}
}

// Consolidator folds old conversation into MEMORY.md and HISTORY.md. It is
// safe for concurrent use by many sessions; calls for one session must not
// run concurrently with writes to that session (the agent loop's
// per-session worker guarantees this).
type Consolidator struct {
	opts  Options
	log   *slog.Logger
	files *files
	// lock serializes every read-modify-write of the memory files, across
	// sessions, for the whole consolidation call: two sessions updating
	// MEMORY.md from the same old version would lose one's facts. It is a
	// channel so that waiting respects ctx.
	lock chan struct{}
	// unlock releases opts.Lock; set and cleared while lock is held.
	unlock func()

	mu       sync.Mutex
	failures map[string]int // consecutive failed calls per session key
}

// New returns a Consolidator for opts.
func New(opts Options) (*Consolidator, error) {
	switch {
	case opts.Workspace == "":
		return nil, errors.New("memory: no workspace")
	case opts.Provider == nil:
		return nil, errors.New("memory: no provider")
	case opts.Store == nil:
		return nil, errors.New("memory: no session store")
	}
	opts.setDefaults()
	c := &Consolidator{
		opts:     opts,
		log:      opts.Logger.With("component", "memory"),
		files:    newFiles(opts.Workspace),
		lock:     make(chan struct{}, 1),
		failures: map[string]int{},
	}
	if c.Budget() <= 0 {
		return nil, fmt.Errorf("memory: context window %d leaves no room after %d output tokens and a %d safety margin",
			opts.ContextWindowTokens, opts.MaxTokens, opts.SafetyMargin)
	}
	return c, nil
}

// MemoryContext returns MEMORY.md for the system prompt ("" when there is
// none). It stats the file and re-reads it only when it changed.
func (c *Consolidator) MemoryContext() string {
	s, err := c.files.memory()
	if err != nil {
		c.log.Warn("cannot read memory", "err", err)
	}
	return s
}

// MemoryPath and HistoryPath are the files this Consolidator writes.
func (c *Consolidator) MemoryPath() string  { return c.files.memoryPath() }
func (c *Consolidator) HistoryPath() string { return c.files.historyPath() }

// Budget is the prompt size that triggers consolidation: the context window
// less the reply's output tokens and the safety margin.
func (c *Consolidator) Budget() int {
	return c.opts.ContextWindowTokens - c.opts.MaxTokens - c.opts.SafetyMargin
}

// EstimatePrompt approximates the tokens of the next request for s: system
// prompt, overhead (tools, the coming user message) and history.
func (c *Consolidator) EstimatePrompt(s *session.Session) int {
	var system int
	if c.opts.SystemPrompt != nil {
		system = EstimateText(c.opts.SystemPrompt())
	} else {
		system = EstimateText(c.MemoryContext()) + systemOverheadTokens
	}
	return system + c.opts.OverheadTokens + EstimateTokens(s.History(0), nil)
}

// MaybeConsolidate consolidates s when its next prompt would exceed the
// budget, round by round until the estimate is at most half the budget or
// MaxRounds calls were made. A failed call ends the trigger with an error
// (the turn goes on; the next turn tries again); the MaxFailures-th
// consecutive failure archives the raw messages instead, for this and the
// remaining rounds, so the session gets under budget without the model.
// A call refused by a used-up usage budget is not a failure: consolidation
// waits (logged, nil returned, nothing archived) until the budget allows
// it again. Nor is losing the shared lock (Options.Lock): the trigger ends
// with an error, and a later turn tries again.
func (c *Consolidator) MaybeConsolidate(ctx context.Context, s *session.Session) error {
	budget := c.Budget()
	est := c.EstimatePrompt(s)
	if est <= budget {
		return nil
	}
	target := budget / 2
	log := c.log.With("session", s.Key)
	log.Info("prompt over budget; consolidating", "estimate", est, "budget", budget, "target", target)
	raw := false
	rounds := 0
	for ; rounds < c.opts.MaxRounds && est > target; rounds++ {
		end, ok := c.pickChunk(s, est-target, false)
		if !ok {
			log.Info("nothing left to consolidate before the current turn", "estimate", est)
			return nil
		}
		if raw {
			if err := c.archiveRaw(ctx, s, end, "consolidation failed"); err != nil {
				return err
			}
		} else if err := c.consolidateChunk(ctx, s, end); err != nil {
			if ctx.Err() != nil || errors.Is(err, errLockLost) {
				return err // the turn was cancelled, or another worker may write now: not the model's failure
			}
			if be, ok := errors.AsType[*usage.BudgetError](err); ok {
				// Not the model's failure either: the history stays as it
				// is, and a turn after the budget resets folds it.
				log.Info("budget used up; consolidation waits until it resets", "budget", be.Error())
				return nil
			}
			n := c.failed(s.Key)
			if n < c.opts.MaxFailures {
				return fmt.Errorf("memory: consolidate %s (failure %d of %d before raw archive): %w", s.Key, n, c.opts.MaxFailures, err)
			}
			log.Warn("consolidation keeps failing; archiving raw messages", "failures", n, "err", err)
			c.resetFailures(s.Key)
			raw = true
			if err := c.archiveRaw(ctx, s, end, "consolidation failed"); err != nil {
				return err
			}
		} else {
			c.resetFailures(s.Key)
		}
		est = c.EstimatePrompt(s)
	}
	if est > target {
		log.Info("consolidation stopped over target", "rounds", rounds, "estimate", est, "target", target)
	} else {
		log.Info("consolidated", "rounds", rounds, "estimate", est, "cursor", s.Consolidated())
	}
	return nil
}

// ArchiveAll consolidates every message after the cursor (before /new).
// Since the conversation is about to be put aside, a failed call archives
// the rest raw at once instead of waiting for later retries.
func (c *Consolidator) ArchiveAll(ctx context.Context, s *session.Session) error {
	raw := false
	for s.Consolidated() < s.Len() {
		end, _ := c.pickChunk(s, math.MaxInt, true)
		if raw {
			// The rest in one entry: no reason to cut it into chunks.
			if err := c.archiveRaw(ctx, s, s.Len(), "archived on /new; consolidation failed"); err != nil {
				return err
			}
			continue
		}
		if err := c.consolidateChunk(ctx, s, end); err != nil {
			if ctx.Err() != nil || errors.Is(err, errLockLost) {
				return err
			}
			if be, ok := errors.AsType[*usage.BudgetError](err); ok {
				// The conversation is put aside now: keep it word for word
				// rather than wait for the budget.
				c.log.Info("budget used up on /new; archiving raw messages", "session", s.Key, "budget", be.Error())
			} else {
				c.log.Warn("consolidation failed on /new; archiving raw messages", "session", s.Key, "err", err)
			}
			raw = true
			continue
		}
		c.resetFailures(s.Key)
	}
	return nil
}

// Compact folds the conversation into memory now (/compact), all but its
// last keep messages (rounded back to the start of a user message, so the
// recent exchanges stay word for word). It returns how many messages were
// folded. Unlike MaybeConsolidate it does not fall back to a raw archive:
// a failed call is the caller's to report, and the history stays as it is.
func (c *Consolidator) Compact(ctx context.Context, s *session.Session, keep int) (folded int, err error) {
	stop := -1
	for i := s.Len() - max(keep, 0); i > s.Consolidated(); i-- {
		if i < s.Len() && s.Messages[i].Role == providers.RoleUser {
			stop = i
			break
		}
	}
	from := s.Consolidated()
	for stop > 0 && s.Consolidated() < stop {
		end, ok := c.pickChunk(s, math.MaxInt, false)
		if !ok {
			break
		}
		end = min(end, stop)
		if err := c.consolidateChunk(ctx, s, end); err != nil {
			return s.Consolidated() - from, err
		}
		c.resetFailures(s.Key)
	}
	return s.Consolidated() - from, nil
}

func (c *Consolidator) failed(key string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.failures[key]++
	return c.failures[key]
}

func (c *Consolidator) resetFailures(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.failures, key)
}

// chunkCap is the most conversation one consolidation call may carry: it
// must fit in the window next to MEMORY.md and the instructions.
func (c *Consolidator) chunkCap() int {
	budget := c.Budget()
	room := budget - EstimateText(c.MemoryContext()) - consolidationOverheadTokens
	return max(room, budget/4)
}

// pickChunk chooses the end (exclusive) of the next chunk, which starts at
// the cursor. A chunk ends just before a user message, so an assistant's
// tool calls stay with their results; with toEnd the end of the history is
// a boundary too. It takes the shortest chunk that removes need tokens from
// the prompt, but no chunk whose prompt text exceeds chunkCap unless it is
// the first boundary (which cannot be cut). ok is false when no boundary
// follows the cursor.
func (c *Consolidator) pickChunk(s *session.Session, need int, toEnd bool) (end int, ok bool) {
	msgs := s.Messages
	start := min(max(s.Consolidated(), 0), len(msgs))
	limit := c.chunkCap()
	removed, promptSize := 0, 0
	best := -1
	for i := start; i <= len(msgs); i++ {
		boundary := i > start && (i == len(msgs) && toEnd || i < len(msgs) && msgs[i].Role == providers.RoleUser)
		if boundary {
			if promptSize > limit && best >= 0 {
				break
			}
			best = i
			if removed >= need {
				break
			}
		}
		if i == len(msgs) {
			break
		}
		removed += EstimateTokens(msgs[i:i+1], nil)
		promptSize += EstimateText(formatMessages(msgs[i:i+1], c.opts.Location, maxPromptMessageChars))
	}
	return best, best >= 0
}

// acquire takes the in-process lock and opts.Lock. The work is done under
// held: it ends with ctx, or when the shared lock is lost.
func (c *Consolidator) acquire(ctx context.Context) (held context.Context, err error) {
	select {
	case c.lock <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if c.opts.Lock == nil {
		return ctx, nil
	}
	held, release, err := c.opts.Lock(ctx)
	if err != nil {
		<-c.lock
		return nil, err
	}
	c.unlock = release
	return held, nil
}

// errLockLost marks work stopped because the shared lock was lost: not the
// model's failure.
var errLockLost = errors.New("memory: lock lost")

// stillHeld returns an error once held ended: no write may follow.
func stillHeld(held context.Context) error {
	if held.Err() == nil {
		return nil
	}
	return fmt.Errorf("%w before writing: %w", errLockLost, context.Cause(held))
}

func (c *Consolidator) release() {
	if c.unlock != nil {
		c.unlock()
		c.unlock = nil
	}
	<-c.lock
}

// consolidateChunk asks the model to fold s.Messages[cursor:end] into
// memory, writes HISTORY.md then MEMORY.md, then moves the cursor. Files
// are written before the cursor moves: a crash in between repeats a chunk
// (a duplicate history entry) but never drops one.
func (c *Consolidator) consolidateChunk(ctx context.Context, s *session.Session, end int) error {
	held, err := c.acquire(ctx)
	if err != nil {
		return err
	}
	defer c.release()

	chunk := s.Messages[s.Consolidated():end]
	current, err := c.files.readMemory()
	if err != nil {
		return err
	}
	memTokens := EstimateText(current)
	compact := memTokens > c.opts.MemoryCapTokens
	compactTo := 0
	if compact {
		compactTo = c.opts.MemoryCapTokens * 3 / 4
	}
	req := providers.ChatRequest{
		Model: c.opts.Model,
		Messages: []providers.Message{
			{Role: providers.RoleSystem, Content: consolidationSystem},
			{Role: providers.RoleUser, Content: userPrompt(current, formatMessages(chunk, c.opts.Location, maxPromptMessageChars), compactTo, memTokens)},
		},
		Tools:      []providers.ToolDefinition{saveMemoryDefinition()},
		ToolChoice: saveMemoryTool,
		MaxTokens:  c.opts.MaxTokens,
	}
	callCtx, cancel := context.WithTimeout(held, c.opts.CallTimeout)
	resp, err := c.opts.Provider.Chat(callCtx, req)
	cancel()
	if err := stillHeld(held); err != nil {
		return err
	}
	if err != nil {
		return fmt.Errorf("consolidation call: %w", err)
	}
	args, err := parseSaveMemory(resp)
	if err != nil {
		return err
	}
	update := current
	if args.hasMemory {
		update = strings.TrimSpace(args.memory)
		if update == "" && strings.TrimSpace(current) != "" {
			return fmt.Errorf("memory_update would erase MEMORY.md: %w", errBadToolCall)
		}
		if update != "" {
			update += "\n"
		}
	}
	// The agent may edit MEMORY.md with its file tools while the call runs;
	// overwriting that edit would lose it. Retry on a later turn instead.
	if now, err := c.files.readMemory(); err != nil {
		return err
	} else if now != current {
		return errors.New("MEMORY.md changed during consolidation")
	}

	when, ok := firstTime(chunk, c.opts.Location)
	if !ok {
		when = c.opts.Now().In(c.opts.Location)
	}
	entries := []string{normalizeEntry(args.history, when)}
	if compact && EstimateText(update) > c.opts.MemoryCapTokens {
		kept, moved := trimToCap(update, c.opts.MemoryCapTokens)
		if moved != "" {
			c.log.Warn("MEMORY.md still over its cap after compaction; moving oldest sections to HISTORY.md",
				"tokens", EstimateText(update), "cap", c.opts.MemoryCapTokens)
			entries = append(entries, c.stamp()+" [MEMORY.md overflow] Sections moved out of MEMORY.md to keep it under its size limit:\n\n"+moved)
			update = kept
		}
	}
	if err := stillHeld(held); err != nil {
		return err
	}
	if err := c.files.appendHistory(entries...); err != nil {
		return err
	}
	if update != current {
		if err := stillHeld(held); err != nil {
			return err // a repeated chunk later: a duplicate history entry, nothing lost
		}
		if err := c.files.keepVersion(c.opts.Now()); err != nil {
			c.log.Warn("the memory being replaced could not be kept as a version", "err", err)
		}
		if err := c.files.writeMemory(update); err != nil {
			return err
		}
	}
	if err := c.opts.Store.SetCursor(held, s, end); err != nil {
		return fmt.Errorf("memory: move cursor of %s to %d: %w", s.Key, end, err)
	}
	return nil
}

// archiveRaw appends s.Messages[cursor:end] verbatim to HISTORY.md and
// moves the cursor: rough, but nothing is lost.
func (c *Consolidator) archiveRaw(ctx context.Context, s *session.Session, end int, why string) error {
	held, err := c.acquire(ctx)
	if err != nil {
		return err
	}
	defer c.release()
	chunk := s.Messages[s.Consolidated():end]
	entry := fmt.Sprintf("%s [raw archive] %d messages of %s (%s):\n\n%s",
		c.stamp(), len(chunk), s.Key, why, strings.TrimRight(formatMessages(chunk, c.opts.Location, 0), "\n"))
	if err := stillHeld(held); err != nil {
		return err
	}
	if err := c.files.appendHistory(entry); err != nil {
		return err
	}
	if err := c.opts.Store.SetCursor(held, s, end); err != nil {
		return fmt.Errorf("memory: move cursor of %s to %d: %w", s.Key, end, err)
	}
	return nil
}

func (c *Consolidator) stamp() string {
	return "[" + c.opts.Now().In(c.opts.Location).Format(stampLayout) + "]"
}
