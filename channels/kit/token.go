package kit

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"time"
)

// TokenFetcher obtains a fresh access token and how long it lives.
type TokenFetcher func(ctx context.Context) (token string, ttl time.Duration, err error)

// TokenCache holds a platform access token and refreshes it shortly before
// it expires. Concurrent callers that find it stale share one refresh
// (single flight); a caller whose ctx ends stops waiting without cancelling
// the refresh for the others. It is safe for concurrent use.
type TokenCache struct {
	fetch TokenFetcher
	// margin is how long before expiry a token counts as stale: a tenth
	// of its lifetime, at most 5 minutes.
	margin time.Duration
	now    func() time.Time

	mu       sync.Mutex
	token    string
	refresh  time.Time // when the token becomes stale
	inflight *flight
}

type flight struct {
	done  chan struct{}
	token string
	err   error
}

// NewTokenCache returns a cache around fetch.
func NewTokenCache(fetch TokenFetcher) *TokenCache {
	return &TokenCache{fetch: fetch, now: time.Now}
}

// Get returns a token that is not stale, fetching one if needed.
func (c *TokenCache) Get(ctx context.Context) (string, error) {
	c.mu.Lock()
	if c.token != "" && c.now().Before(c.refresh) {
		tok := c.token
		c.mu.Unlock()
		return tok, nil
	}
	f := c.inflight
	if f == nil {
		f = &flight{done: make(chan struct{})}
		c.inflight = f
		go c.run(f)
	}
	c.mu.Unlock()
	select {
	case <-f.done:
		return f.token, f.err
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

// fetchTimeout bounds one refresh, which runs detached from any caller.
const fetchTimeout = 30 * time.Second

func (c *TokenCache) run(f *flight) {
	ctx, cancel := context.WithTimeout(context.Background(), fetchTimeout)
	defer cancel()
	tok, ttl, err := c.fetch(ctx)
	if err == nil && tok == "" {
		err = errors.New("the platform returned an empty access token")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.inflight = nil
	if err == nil && tok != "" {
		margin := c.margin
		if margin == 0 {
			margin = min(ttl/10, 5*time.Minute)
		}
		c.token, c.refresh = tok, c.now().Add(ttl-margin)
	}
	f.token, f.err = tok, err
	close(f.done)
}

// Header is a Client.Auth that sets header name to prefix and a token from
// the cache ("Authorization", "Bearer ").
func (c *TokenCache) Header(name, prefix string) func(context.Context, *http.Request) error {
	return func(ctx context.Context, req *http.Request) error {
		tok, err := c.Get(ctx)
		if err != nil {
			return err
		}
		req.Header.Set(name, prefix+tok)
		return nil
	}
}

// Invalidate drops token if it is still the cached one, so that the next
// Get fetches a new one (after the platform said it expired early).
func (c *TokenCache) Invalidate(token string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.token == token {
		c.token = ""
	}
}
