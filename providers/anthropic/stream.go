package anthropic

import (
	"bytes"
	"fmt"

	"github.com/nanobot-go/nanobot/providers"
	"github.com/nanobot-go/nanobot/providers/internal/calltimer"
	"github.com/nanobot-go/nanobot/providers/internal/wire"
)

// accumulator folds stream events into the message they describe.
type accumulator struct {
	msg     messageResponse
	stopped bool // message_stop arrived
}

// add applies one event and returns the text or thinking it carried.
func (a *accumulator) add(ev *streamEvent) (providers.Delta, error) {
	switch ev.Type {
	case "message_start":
		if ev.Message != nil {
			a.msg = *ev.Message
			a.msg.Content = nil
		}
	case "content_block_start":
		// Blocks start in index order with no gaps.
		if ev.Index != len(a.msg.Content) {
			return providers.Delta{}, fmt.Errorf("content_block_start for block %d, expected %d", ev.Index, len(a.msg.Content))
		}
		a.msg.Content = append(a.msg.Content, ev.ContentBlock)
	case "content_block_delta":
		if ev.Index < 0 || ev.Index >= len(a.msg.Content) {
			return providers.Delta{}, fmt.Errorf("content_block_delta for block %d of %d", ev.Index, len(a.msg.Content))
		}
		return a.delta(&a.msg.Content[ev.Index], ev), nil
	case "message_delta":
		a.msg.StopReason = ev.Delta.StopReason
		if u := ev.Usage; u != nil {
			// Counts here are whole-message totals; an absent one keeps
			// what message_start said.
			merge(&a.msg.Usage.InputTokens, u.InputTokens)
			merge(&a.msg.Usage.OutputTokens, u.OutputTokens)
			merge(&a.msg.Usage.CacheReadInputTokens, u.CacheReadInputTokens)
			merge(&a.msg.Usage.CacheCreationInputTokens, u.CacheCreationInputTokens)
		}
	case "message_stop":
		a.stopped = true
	}
	// ping, content_block_stop and event types added later carry nothing
	// we keep.
	return providers.Delta{}, nil
}

func (a *accumulator) delta(b *responseBlock, ev *streamEvent) providers.Delta {
	switch ev.Delta.Type {
	case "text_delta":
		b.Text += ev.Delta.Text
		return providers.Delta{Content: ev.Delta.Text}
	case "thinking_delta":
		b.Thinking += ev.Delta.Thinking
		return providers.Delta{Reasoning: ev.Delta.Thinking}
	case "signature_delta":
		b.Signature += ev.Delta.Signature
	case "input_json_delta":
		// The block opens with "input":{} and the fragments replace it;
		// they are kept as sent, valid JSON or not, for the repair step.
		if ev.Delta.PartialJSON != "" {
			if string(bytes.TrimSpace(b.Input)) == "{}" {
				b.Input = nil
			}
			b.Input = append(b.Input, ev.Delta.PartialJSON...)
		}
	}
	return providers.Delta{}
}

func merge(dst **int, src *int) {
	if src != nil {
		*dst = src
	}
}

// readStream posts a streaming request and folds its events into acc until
// an error event or the end of the body.
func (p *Provider) readStream(t *calltimer.Timer, body []byte, acc *accumulator, onDelta func(providers.Delta)) error {
	res, err := p.postStream(t.Context(), body)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	for data, err := range wire.NewSSEReader(res.Body).Events() {
		if err != nil {
			return err
		}
		t.Kick()
		var ev streamEvent
		if err := wire.DecodeLenient(data, &ev); err != nil {
			return &malformedStream{err: fmt.Errorf("decode event: %w", err)}
		}
		if ev.Type == "error" {
			return &wire.EventError{Data: bytes.Clone(data)}
		}
		d, err := acc.add(&ev)
		if err != nil {
			return &malformedStream{err: err}
		}
		if onDelta != nil && (d.Content != "" || d.Reasoning != "") {
			onDelta(d)
		}
	}
	return nil
}

// malformedStream is a stream whose events do not fit together.
type malformedStream struct{ err error }

func (e *malformedStream) Error() string { return "malformed stream: " + e.err.Error() }
func (e *malformedStream) Unwrap() error { return e.err }
