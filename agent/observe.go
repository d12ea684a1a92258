package agent

import (
	"context"
	"time"

	"github.com/nanobot-go/nanobot/providers"
)

// RunObserver is told about every provider call and tool execution of a
// run: metrics and the usage ledger hang here. It is called from the run's
// goroutine for LLM calls and from the tool goroutines (concurrently) for
// tool calls, so implementations must be safe for concurrent use and must
// not block. ctx is the run's context: tools.CallFrom(ctx) names the
// channel, chat and session.
type RunObserver interface {
	ObserveLLM(ctx context.Context, c LLMCall)
	ObserveTool(ctx context.Context, t ToolCall)
}

// LLMCall is one provider call of a run.
type LLMCall struct {
	Model    string
	Duration time.Duration
	// Usage is what the provider reported (zero when it reported nothing
	// or the call failed).
	Usage providers.Usage
	// Err is the call's error (nil on success).
	Err error
}

// ToolCall is one tool execution of a run.
type ToolCall struct {
	Name     string
	Duration time.Duration
	// Failed is set when the tool returned an error (the model got an
	// error result), including invalid arguments and unknown tools.
	Failed bool
}

func (r *Runner) observeLLM(ctx context.Context, start time.Time, resp *providers.LLMResponse, err error) {
	if r.Observer == nil {
		return
	}
	c := LLMCall{Model: r.Model, Duration: time.Since(start), Err: err}
	if resp != nil {
		c.Usage = resp.Usage
	}
	r.Observer.ObserveLLM(ctx, c)
}
