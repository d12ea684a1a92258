package api

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"time"
)

// turnSlots bound the API's turns in flight. A request that finds every
// slot taken waits up to wait for one (turns are seconds long, so a short
// wait absorbs a burst) and is then refused: an OpenAI client backs off on
// 429 and retries, where a request queued without bound would only hit
// its own timeout. The count is this process's: in a cluster it is taken
// where the request arrives, whichever worker runs the turn.
type turnSlots struct {
	slots chan struct{}
	wait  time.Duration
}

func newTurnSlots(limit int, wait time.Duration) *turnSlots {
	return &turnSlots{slots: make(chan struct{}, max(limit, 1)), wait: max(wait, 0)}
}

// acquire takes a slot, waiting up to s.wait; release gives it back. ok
// is false when none freed in time or ctx ended first.
func (s *turnSlots) acquire(ctx context.Context) (release func(), ok bool) {
	release = func() { <-s.slots }
	select {
	case s.slots <- struct{}{}:
		return release, true
	default:
	}
	if s.wait == 0 {
		return nil, false
	}
	t := time.NewTimer(s.wait)
	defer t.Stop()
	select {
	case s.slots <- struct{}{}:
		return release, true
	case <-t.C:
	case <-ctx.Done():
	}
	return nil, false
}

// inFlight is how many turns hold a slot now.
func (s *turnSlots) inFlight() int { return len(s.slots) }

// admitSlot takes a turn slot for r, answering 429 (agent_saturated, with
// Retry-After) itself when none is free in time; the caller releases the
// slot when its turn is over.
func (c *Channel) admitSlot(w http.ResponseWriter, r *http.Request) (func(), bool) {
	release, ok := c.slots.acquire(r.Context())
	if ok {
		return release, true
	}
	if r.Context().Err() != nil {
		return nil, false // the client went away while waiting: nobody to answer
	}
	secs := max(1, int(math.Ceil(c.slots.wait.Seconds())))
	w.Header().Set("Retry-After", strconv.Itoa(secs))
	writeError(w, http.StatusTooManyRequests, "rate_limit_error", "agent_saturated",
		fmt.Sprintf("agent busy: %d turns running, try again (api.maxConcurrent is %d)", c.slots.inFlight(), cap(c.slots.slots)))
	return nil, false
}
