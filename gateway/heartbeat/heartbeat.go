// Package heartbeat wakes the agent periodically to check HEARTBEAT.md.
// A file with no actionable content (only headings, comments and blank
// list items) is skipped without calling the LLM, so an idle heartbeat
// costs nothing. Otherwise the LLM decides through a forced tool call
// ({action: skip|run, tasks}) whether anything is due; on "run" the tasks go
// through the agent loop in a dedicated session with a short history, and
// the result reaches the most recently active chat only when the agent has
// something worth saying (it answers HEARTBEAT_OK otherwise, which is not
// delivered).
package heartbeat

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/providers"
	"github.com/nanobot-go/nanobot/tools"
	"github.com/nanobot-go/nanobot/tools/goals"
)

// SessionKey is the heartbeat's own conversation.
const SessionKey = "heartbeat"

// MaxHistory is the heartbeat session's history window.
const MaxHistory = 8

// Config configures the service.
type Config struct {
	Workspace string
	Interval  time.Duration
	// Provider decides whether a task is due. The gateway passes the
	// agent's metered provider (agent.Runner.Metered), so the decision is
	// held to the budgets and in the usage ledger like any other call.
	Provider providers.Provider
	Model    string
	// Publish hands the run's task to the agent loop.
	Publish func(ctx context.Context, m bus.Inbound) error
	// Target returns the most recently active chat.
	Target func() (channel, chatID string, ok bool)
	Log    *slog.Logger
	// Goals are advanced at every beat: each active goal gets a check-in
	// turn in its conversation (nil: none).
	Goals *goals.Store
	// OnDecision is told every decision (for metrics and tests): "empty",
	// "skip", "run", "no-target" or "error".
	OnDecision func(decision string)
}

// Service is the heartbeat.
type Service struct{ cfg Config }

// New returns the service.
func New(cfg Config) *Service {
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	cfg.Log = cfg.Log.With("component", "heartbeat")
	return &Service{cfg: cfg}
}

// Run beats every Interval until ctx ends.
func (s *Service) Run(ctx context.Context) error {
	t := time.NewTicker(s.cfg.Interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			d, err := s.Beat(ctx)
			if err != nil {
				s.cfg.Log.Warn("heartbeat failed", "err", err)
			} else {
				s.cfg.Log.Debug("heartbeat", "decision", d)
			}
			if n, err := s.AdvanceGoals(ctx); err != nil {
				s.cfg.Log.Warn("advancing goals failed", "advanced", n, "err", err)
			}
		}
	}
}

var (
	reComment   = regexp.MustCompile(`(?s)<!--.*?-->`)
	reEmptyItem = regexp.MustCompile(`^\s*([-*+]|\d+[.)])\s*(\[[ xX]?\])?\s*$`)
)

// Actionable returns the task lines of a HEARTBEAT.md: everything but
// headings, HTML comments, blank lines and empty list items.
func Actionable(content string) string {
	content = reComment.ReplaceAllString(content, "")
	var keep []string
	for _, line := range strings.Split(content, "\n") {
		t := strings.TrimSpace(line)
		if t == "" || strings.HasPrefix(t, "#") || reEmptyItem.MatchString(t) {
			continue
		}
		keep = append(keep, t)
	}
	return strings.Join(keep, "\n")
}

var decideTool = providers.ToolDefinition{
	Name:        "heartbeat",
	Description: "Report whether any task is due now.",
	Parameters: map[string]any{
		"type": "object",
		"properties": map[string]any{
			"action": map[string]any{"type": "string", "enum": []any{"skip", "run"}},
			"tasks":  map[string]any{"type": "string", "description": "the tasks to do now, when action is run"},
		},
		"required": []any{"action"},
	},
}

// Beat runs one heartbeat and returns its decision.
func (s *Service) Beat(ctx context.Context) (string, error) {
	decide := func(d string) string {
		if s.cfg.OnDecision != nil {
			s.cfg.OnDecision(d)
		}
		return d
	}
	data, err := os.ReadFile(filepath.Join(s.cfg.Workspace, "HEARTBEAT.md"))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return decide("error"), err
	}
	tasks := Actionable(string(data))
	if tasks == "" {
		return decide("empty"), nil
	}
	channel, chat, ok := s.cfg.Target()
	if !ok {
		return decide("no-target"), nil
	}
	now := time.Now()
	// The decision is charged to the conversation the tasks run in.
	ctx = tools.WithCallContext(ctx, tools.CallContext{Channel: channel, ChatID: chat, SenderID: "heartbeat",
		SessionKey: SessionKey, Source: bus.SourceHeartbeat.String()})
	resp, err := s.cfg.Provider.Chat(ctx, providers.ChatRequest{
		Model: s.cfg.Model,
		Messages: []providers.Message{
			{Role: providers.RoleSystem, Content: "You are the heartbeat of a personal assistant. Decide whether any of the user's periodic tasks below is due now, given the current time. Call the heartbeat tool: action \"run\" with the due tasks, or \"skip\"."},
			{Role: providers.RoleUser, Content: fmt.Sprintf("Current time: %s\n\nTasks (from HEARTBEAT.md):\n%s", now.Format("2006-01-02 15:04 (Monday) MST"), tasks)},
		},
		Tools:      []providers.ToolDefinition{decideTool},
		ToolChoice: "heartbeat",
		MaxTokens:  512,
	})
	if err != nil {
		return decide("error"), err
	}
	action, due := "skip", ""
	for _, tc := range resp.ToolCalls {
		if tc.Name == "heartbeat" {
			action, _ = tc.Arguments["action"].(string)
			due, _ = tc.Arguments["tasks"].(string)
		}
	}
	if action != "run" {
		return decide("skip"), nil
	}
	if strings.TrimSpace(due) == "" {
		due = tasks
	}
	err = s.cfg.Publish(ctx, bus.Inbound{
		Channel: channel, ChatID: chat, SenderID: "heartbeat", SessionKey: SessionKey,
		Content:    fmt.Sprintf("[Heartbeat: these periodic tasks are due now. Do them. If the result is not worth telling the user, reply exactly %s.]\n%s", bus.SilentReply, due),
		MessageID:  fmt.Sprintf("heartbeat:%d", now.UnixNano()),
		Source:     bus.SourceHeartbeat,
		Background: true,
		MaxHistory: MaxHistory,
		ReceivedAt: now,
	})
	if err != nil {
		return decide("error"), err
	}
	return decide("run"), nil
}

// AdvanceGoals starts a check-in turn for each active goal not advanced
// within the interval, in the goal's own conversation, so its progress
// reaches the chat that set it. It returns how many it started.
func (s *Service) AdvanceGoals(ctx context.Context) (int, error) {
	if s.cfg.Goals == nil {
		return 0, nil
	}
	now := time.Now()
	// A little under the interval, so a goal is not skipped for a beat that
	// comes a moment early.
	due, err := s.cfg.Goals.Due(now, s.cfg.Interval*9/10)
	if err != nil {
		return 0, err
	}
	for i, g := range due {
		err := s.cfg.Publish(ctx, bus.Inbound{
			Channel: g.Channel, ChatID: g.ChatID, SessionKey: g.SessionKey, Agent: g.Agent, SenderID: "heartbeat",
			Content:    goals.CheckIn(g, bus.SilentReply),
			MessageID:  fmt.Sprintf("goal:%s:%d", g.ID, now.UnixNano()),
			Source:     bus.SourceHeartbeat,
			SourceRef:  g.ID,
			Background: true,
			ReceivedAt: now,
		})
		if err != nil {
			return i, fmt.Errorf("goal %s: %w", g.ID, err)
		}
		s.cfg.Log.Info("goal check-in started", "goal", g.ID, "session", g.SessionKey)
	}
	return len(due), nil
}
