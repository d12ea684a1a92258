package api

import (
	"fmt"
	"math"
	"net/http"
	"strconv"
	"time"

	"golang.org/x/time/rate"
)

// limiters hold one token bucket per API key (keyed by the key's digest;
// "" is the keyless loopback client). The set is fixed at New, so the map
// is only read afterwards and needs no lock (rate.Limiter locks itself).
type limiters struct {
	perMinute int
	byKey     map[string]*rate.Limiter
}

func newLimiters(perMinute int, keys [][]byte) *limiters {
	if perMinute <= 0 {
		return nil
	}
	l := &limiters{perMinute: perMinute, byKey: map[string]*rate.Limiter{}}
	every := rate.Limit(float64(perMinute) / 60)
	if len(keys) == 0 {
		l.byKey[""] = rate.NewLimiter(every, perMinute)
	}
	for _, k := range keys {
		l.byKey[string(k)] = rate.NewLimiter(every, perMinute)
	}
	return l
}

// allow takes a token for key at now, or returns how long until one is
// free. A refused request takes nothing.
func (l *limiters) allow(key string, now time.Time) (bool, time.Duration) {
	if l == nil {
		return true, 0
	}
	lim := l.byKey[key]
	if lim == nil {
		return true, 0 // not an accepted key: authorization refused it already
	}
	res := lim.ReserveN(now, 1)
	if d := res.DelayFrom(now); d > 0 {
		res.CancelAt(now)
		return false, d
	}
	return true, 0
}

// rateLimited answers 429 with Retry-After (whole seconds, rounded up)
// when key has no request left; false if it did.
func (c *Channel) rateLimited(w http.ResponseWriter, key string) bool {
	ok, wait := c.limits.allow(key, time.Now())
	if ok {
		return false
	}
	secs := int(math.Ceil(wait.Seconds()))
	w.Header().Set("Retry-After", strconv.Itoa(secs))
	writeError(w, http.StatusTooManyRequests, "requests", "rate_limit_exceeded",
		fmt.Sprintf("rate limit of %d requests per minute reached for this API key (api.rateLimit.requestsPerMinute); retry in %d s", c.limits.perMinute, secs))
	return true
}
