package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Header names of a signed request, both ways.
const (
	HeaderTimestamp = "X-Nanobot-Timestamp"
	HeaderSignature = "X-Nanobot-Signature"
)

// Sign returns the X-Nanobot-Signature value for body sent at timestamp
// (unix seconds): "sha256=" and the hex HMAC-SHA256 of timestamp + "." +
// body under secret.
func Sign(secret string, timestamp int64, body []byte) string {
	return "sha256=" + hex.EncodeToString(mac(secret, strconv.FormatInt(timestamp, 10), body))
}

func mac(secret, timestamp string, body []byte) []byte {
	h := hmac.New(sha256.New, []byte(secret))
	h.Write([]byte(timestamp))
	h.Write([]byte{'.'})
	h.Write(body)
	return h.Sum(nil)
}

// Verification failures; the handler answers 401 to each.
var (
	ErrNoTimestamp   = errors.New("missing or malformed " + HeaderTimestamp + " (unix seconds)")
	ErrStale         = errors.New(HeaderTimestamp + " is more than 5 minutes away from the gateway's clock")
	ErrBadSignature  = errors.New(HeaderSignature + " does not match the body (want sha256=<hex HMAC-SHA256(secret, timestamp.body)>)")
	errNoSignature   = errors.New("missing " + HeaderSignature)
	errSignatureForm = errors.New(HeaderSignature + " is not sha256=<64 hex digits>")
)

// Verify checks a request's timestamp header against now (within MaxSkew)
// and its signature header against body. It returns the signature's hex
// digest (the replay key) on success.
func Verify(secret, timestampHeader, signatureHeader string, body []byte, now time.Time) (string, error) {
	ts, err := strconv.ParseInt(strings.TrimSpace(timestampHeader), 10, 64)
	if err != nil || ts <= 0 {
		return "", ErrNoTimestamp
	}
	if d := now.Sub(time.Unix(ts, 0)); d > MaxSkew || d < -MaxSkew {
		return "", ErrStale
	}
	sig := strings.TrimSpace(signatureHeader)
	if sig == "" {
		return "", errNoSignature
	}
	hexSig, ok := strings.CutPrefix(sig, "sha256=")
	got, err := hex.DecodeString(hexSig)
	if !ok || err != nil || len(got) != sha256.Size {
		return "", errSignatureForm
	}
	if !hmac.Equal(got, mac(secret, strconv.FormatInt(ts, 10), body)) {
		return "", ErrBadSignature
	}
	return strings.ToLower(hexSig), nil
}

// defaultReplayEntries bounds the replay memory: about 100 bytes an entry,
// so some 6.5 MB at most.
const defaultReplayEntries = 1 << 16

// errReplayFull is returned by replayCache.add when every remembered entry
// is still valid and there is no room for another.
var errReplayFull = errors.New("too many requests within the replay window")

// replayCache remembers keys (signatures, message ids) for ttl, at most max
// of them. Entries expire in the order they were added (each lives ttl from
// its insertion), so a FIFO queue prunes them. It is safe for concurrent
// use.
type replayCache struct {
	ttl time.Duration
	max int

	mu    sync.Mutex
	seen  map[string]time.Time // key -> expiry
	queue []replayEntry
	head  int
}

type replayEntry struct {
	key     string
	expires time.Time
}

func newReplayCache(max int, ttl time.Duration) *replayCache {
	return &replayCache{ttl: ttl, max: max, seen: map[string]time.Time{}}
}

// add records key at now. It reports false when key is already there (a
// replay), and errReplayFull when there is no room.
func (r *replayCache) add(key string, now time.Time) (bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.prune(now)
	if _, dup := r.seen[key]; dup {
		return false, nil
	}
	if len(r.seen) >= r.max || len(r.queue)-r.head >= 2*r.max {
		return false, errReplayFull
	}
	exp := now.Add(r.ttl)
	r.seen[key] = exp
	r.queue = append(r.queue, replayEntry{key, exp})
	return true, nil
}

// forget drops key (a message whose delivery failed may be sent again).
func (r *replayCache) forget(key string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.seen, key) // its queue entry expires harmlessly
}

// len is how many keys are remembered.
func (r *replayCache) len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.seen)
}

// prune drops expired entries from the front. Caller holds mu.
func (r *replayCache) prune(now time.Time) {
	for r.head < len(r.queue) && !now.Before(r.queue[r.head].expires) {
		e := r.queue[r.head]
		if exp, ok := r.seen[e.key]; ok && exp.Equal(e.expires) {
			delete(r.seen, e.key)
		}
		r.queue[r.head] = replayEntry{}
		r.head++
	}
	if r.head > 0 && r.head >= len(r.queue)/2 {
		r.queue = append(r.queue[:0], r.queue[r.head:]...)
		r.head = 0
	}
}
