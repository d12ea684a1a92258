package providers

import "context"

// streamDelivered streams req through p, passing the deltas on to onDelta
// (which may be nil). delivered reports whether any delta was passed on:
// a stream that delivered text must not be retried or failed over, or the
// reader would see the text twice.
func streamDelivered(ctx context.Context, p Provider, req ChatRequest, onDelta func(Delta)) (resp *LLMResponse, delivered bool, err error) {
	resp, err = p.Stream(ctx, req, func(d Delta) {
		delivered = true
		if onDelta != nil {
			onDelta(d)
		}
	})
	return resp, delivered, err
}
