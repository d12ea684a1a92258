package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strconv"
	"strings"
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

// maxReplayEntries bounds the replay memory: some 100 bytes an entry in
// memory and on disk, so some 6.5 MB at most.
const maxReplayEntries = 1 << 16

// replayWindow is how long a signature or message id is remembered: a
// timestamp MaxSkew ahead of the gateway's clock is still fresh MaxSkew
// after that.
const replayWindow = 2 * MaxSkew
