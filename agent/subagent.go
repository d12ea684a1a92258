package agent

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/providers"
	"github.com/nanobot-go/nanobot/tools"
)

// Subagents runs background sub-agents (seed section 6): each gets its own
// Runner with a reduced tool set (no message, no spawn), runs concurrently
// up to a limit, and on completion its result is published as an inbound
// message to the conversation that spawned it, where the main agent tells
// the user. /stop cancels a session's sub-agents.
type Subagents struct {
	// Runner is the template for sub-agent runners; its Tools are filtered.
	Runner Runner
	// Publish delivers the result message (the bus's PublishInbound).
	Publish func(ctx context.Context, m bus.Inbound) error
	// Max is the number of sub-agents running at once (default 4).
	Max int
	// Workspace is shown to the sub-agent.
	Workspace string
	Log       *slog.Logger

	once    sync.Once
	sem     chan struct{}
	mu      sync.Mutex
	running map[string]*subagent // id -> running
	seq     int
	wg      sync.WaitGroup
}

type subagent struct {
	session string
	cancel  context.CancelFunc
}

// subagentDenied are the tools a sub-agent never gets.
var subagentDenied = map[string]bool{"message": true, "spawn": true, "send_session_message": true}

func (s *Subagents) init() {
	s.once.Do(func() {
		if s.Max <= 0 {
			s.Max = 4
		}
		s.sem = make(chan struct{}, s.Max)
		s.running = map[string]*subagent{}
		if s.Log == nil {
			s.Log = slog.New(slog.DiscardHandler)
		}
	})
}

// Spawn starts a sub-agent for task on behalf of origin and returns its id.
// The sub-agent outlives the turn that started it; it ends when done, when
// its session is stopped, or at Wait's context.
func (s *Subagents) Spawn(_ context.Context, origin tools.CallContext, task, label string) (string, error) {
	s.init()
	if origin.Channel == "" {
		return "", fmt.Errorf("no conversation to report back to")
	}
	s.mu.Lock()
	s.seq++
	id := fmt.Sprintf("sub-%d", s.seq)
	if label == "" {
		label = truncateRunes(oneLine(task), 40)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s.running[id] = &subagent{session: origin.SessionKey, cancel: cancel}
	s.mu.Unlock()

	s.wg.Go(func() {
		defer func() {
			s.mu.Lock()
			delete(s.running, id)
			s.mu.Unlock()
			cancel()
		}()
		result := s.run(ctx, id, origin, task)
		if ctx.Err() != nil {
			s.Log.Info("sub-agent cancelled", "id", id, "session", origin.SessionKey)
			return
		}
		msg := bus.Inbound{
			Channel: origin.Channel, ChatID: origin.ChatID, SenderID: "subagent", SessionKey: origin.SessionKey,
			Content:    fmt.Sprintf("[Background task %q (%s) finished. Tell the user the outcome in your own words.]\n\n%s", label, id, result),
			MessageID:  "subagent:" + id + fmt.Sprint(time.Now().UnixNano()),
			Source:     bus.SourceSubagent,
			SourceRef:  id,
			ReceivedAt: time.Now(),
		}
		if err := s.Publish(context.Background(), msg); err != nil {
			s.Log.Error("sub-agent result lost", "id", id, "err", err)
		}
	})
	return id, nil
}

func (s *Subagents) run(ctx context.Context, id string, origin tools.CallContext, task string) string {
	select {
	case s.sem <- struct{}{}:
	case <-ctx.Done():
		return ""
	}
	defer func() { <-s.sem }()
	r := s.Runner
	r.Stream = false
	if r.Tools != nil {
		r.Tools = filteredTools{next: r.Tools, deny: subagentDenied}
	}
	sub := origin
	sub.SubAgent = true
	sub.Source = bus.SourceSubagent.String()
	ctx = tools.WithCallContext(ctx, sub)
	msgs := []providers.Message{
		{Role: providers.RoleSystem, Content: fmt.Sprintf("You are a sub-agent of nanobot working in the background on one task. Workspace: %s. Work with the tools you have, then reply with a complete, concise report of the result (what you did, what you found, file paths). You cannot talk to the user; your reply is handed to the main agent.", s.Workspace)},
		{Role: providers.RoleUser, Content: task},
	}
	res, err := r.Run(ctx, msgs, nil)
	if err != nil {
		return "The background task failed: " + err.Error()
	}
	return res.Content
}

// CancelSession cancels the sub-agents of a session and returns how many.
func (s *Subagents) CancelSession(key string) int {
	s.init()
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, sa := range s.running {
		if sa.session == key {
			sa.cancel()
			n++
		}
	}
	return n
}

// Running returns how many sub-agents are running.
func (s *Subagents) Running() int {
	s.init()
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.running)
}

// Wait cancels all sub-agents when ctx ends and waits for them.
func (s *Subagents) Wait(ctx context.Context) {
	s.init()
	<-ctx.Done()
	s.mu.Lock()
	for _, sa := range s.running {
		sa.cancel()
	}
	s.mu.Unlock()
	s.wg.Wait()
}

// filteredTools hides some tools of a ToolSet.
type filteredTools struct {
	next ToolSet
	deny map[string]bool
}

func (f filteredTools) Definitions() []tools.Definition {
	var out []tools.Definition
	for _, d := range f.next.Definitions() {
		if !f.deny[d.Name] {
			out = append(out, d)
		}
	}
	return out
}

func (f filteredTools) Execute(ctx context.Context, name string, args map[string]any) (tools.Result, error) {
	if f.deny[name] {
		return tools.Result{}, fmt.Errorf("tool %s is not available to sub-agents", name)
	}
	return f.next.Execute(ctx, name, args)
}
