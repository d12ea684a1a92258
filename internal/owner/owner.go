// Package owner holds an instance's owner credential: a random access token
// kept in the state folder (state/web_token, mode 0600, inside a folder the
// sandbox never shows a command). Whoever can read that file is the owner,
// which on a shared machine means the user the gateway runs as: other local
// users cannot read it, and neither can the agent's own commands.
//
// The token is shown by the web chat's first frame and sent as the bearer
// key of a keyless /v1 API; it also signs one-time login codes. A code is
// made by anyone holding the token (the gateway at start-up, `nanobot webui
// open` in another process of the same user) and redeemed once, before it
// expires, by the gateway, which turns it into a workbench login. Codes are
// not stored: a code is its expiry and a random nonce, signed with a key
// derived from the token. The nonces redeemed are remembered until their
// codes expire, in state/login_codes_used beside the token (internal/replay:
// 0600, hashed, pruned), so a code used once stays used across a restart of
// the gateway.
//
// A Key is safe for concurrent use: of two concurrent Redeems of one code,
// one succeeds. Only the gateway redeems codes (`nanobot webui open` and
// the other commands only mint them, and never open the file), so the
// used-codes file has one writer, and locking inside the process is all
// it needs.
package owner

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/nanobot-go/nanobot/internal/atomicfile"
	"github.com/nanobot-go/nanobot/internal/replay"
)

// FileName is the token's file in the state folder. The name predates the
// token's other uses: it was the web chat's token first.
const FileName = "web_token"

// UsedFileName is the file beside the token that remembers the login codes
// redeemed until they expire.
const UsedFileName = "login_codes_used"

// minTokenLen is the shortest token file content taken as a token; anything
// shorter (an empty or torn file) is replaced by a new token.
const minTokenLen = 32

// codePrefix versions the code format.
const codePrefix = "v1."

// Errors of Redeem. A caller answers all of them alike (the client learns
// only that the code did not work); the log may tell them apart. Redeem
// also fails, with another error, when it cannot record a code's use.
var (
	ErrCodeMalformed = errors.New("owner: not a login code")
	ErrCodeForged    = errors.New("owner: login code not signed by this instance")
	ErrCodeExpired   = errors.New("owner: login code expired")
	ErrCodeUsed      = errors.New("owner: login code already used")
)

// IsCodeError reports whether err says the code itself did not work
// (malformed, forged, expired, used), not that its use went unrecorded.
func IsCodeError(err error) bool {
	return errors.Is(err, ErrCodeMalformed) || errors.Is(err, ErrCodeForged) || errors.Is(err, ErrCodeExpired) || errors.Is(err, ErrCodeUsed)
}

// Key is the owner credential of one instance.
type Key struct {
	token   string
	signing []byte // HMAC key for login codes, derived from the token
	now     func() time.Time
	used    *replay.Set // redeemed nonces, until their codes expire
}

// Load reads the token from path, creating it (0600, in a 0700 folder) when
// the file is missing, empty or too short to be one. The codes it redeems
// are remembered in UsedFileName beside it, read at the first Redeem.
func Load(path string) (*Key, error) {
	tok, err := loadOrCreate(path)
	if err != nil {
		return nil, err
	}
	return newKey(tok, filepath.Join(filepath.Dir(path), UsedFileName)), nil
}

// New makes a Key from a token (tests, and callers that hold the token). It
// remembers the codes it redeemed in memory only.
func New(token string) *Key { return newKey(token, "") }

func newKey(token, usedPath string) *Key {
	mac := hmac.New(sha256.New, []byte(token))
	mac.Write([]byte("nanobot owner login codes v1"))
	k := &Key{token: token, signing: mac.Sum(nil), now: time.Now}
	k.used = replay.New(usedPath, replay.Options{Now: func() time.Time { return k.now() }})
	return k
}

// Path is where the token of the instance whose state folder is stateDir
// lives.
func Path(stateDir string) string { return filepath.Join(stateDir, FileName) }

func loadOrCreate(path string) (string, error) {
	if path == "" {
		return "", errors.New("owner: no token file configured")
	}
	if tok, ok := readToken(path); ok {
		return tok, nil
	}
	var raw [24]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return "", fmt.Errorf("owner: %w", err)
	}
	tok := hex.EncodeToString(raw[:])
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return "", fmt.Errorf("owner: %w", err)
	}
	// Two processes of the instance may start at once (the gateway and a
	// `nanobot webui open`): the first token written wins and both use it.
	tmp := path + ".new-" + hex.EncodeToString(raw[:4])
	if err := (atomicfile.Options{}).Write(tmp, []byte(tok+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("owner: store token: %w", err)
	}
	defer os.Remove(tmp)
	if err := os.Link(tmp, path); err != nil {
		if existing, ok := readToken(path); ok {
			return existing, nil
		}
		// A torn or short file from before: replace it.
		if err := os.Rename(tmp, path); err != nil {
			return "", fmt.Errorf("owner: store token: %w", err)
		}
	}
	return tok, nil
}

func readToken(path string) (string, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", false
	}
	tok := strings.TrimSpace(string(b))
	return tok, len(tok) >= minTokenLen
}

// Token is the access token itself (for the terminal of the owner, and for
// the redactor: it must never reach the model or a chat).
func (k *Key) Token() string { return k.token }

// Check reports whether s is the access token, in constant time.
func (k *Key) Check(s string) bool {
	a, b := sha256.Sum256([]byte(s)), sha256.Sum256([]byte(k.token))
	return subtle.ConstantTimeCompare(a[:], b[:]) == 1
}

// LoginCode makes a one-time login code valid for ttl.
func (k *Key) LoginCode(ttl time.Duration) string {
	var payload [8 + 12]byte
	binary.BigEndian.PutUint64(payload[:8], uint64(k.now().Add(ttl).Unix()))
	_, _ = rand.Read(payload[8:])
	return codePrefix + b64(payload[:]) + "." + b64(k.sign(payload[:]))
}

func (k *Key) sign(payload []byte) []byte {
	mac := hmac.New(sha256.New, k.signing)
	mac.Write(payload)
	return mac.Sum(nil)[:20]
}

func b64(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

// Redeem accepts a login code once, before its expiry; see the Err values
// for why it refuses one. A code counts as used once that is on disk: when
// it cannot be recorded, Redeem refuses it with that error.
func (k *Key) Redeem(code string) error {
	rest, ok := strings.CutPrefix(strings.TrimSpace(code), codePrefix)
	if !ok {
		return ErrCodeMalformed
	}
	p, s, ok := strings.Cut(rest, ".")
	if !ok {
		return ErrCodeMalformed
	}
	payload, err1 := base64.RawURLEncoding.DecodeString(p)
	sig, err2 := base64.RawURLEncoding.DecodeString(s)
	if err1 != nil || err2 != nil || len(payload) != 20 {
		return ErrCodeMalformed
	}
	if !hmac.Equal(sig, k.sign(payload)) {
		return ErrCodeForged
	}
	now := k.now()
	expires := time.Unix(int64(binary.BigEndian.Uint64(payload[:8])), 0)
	if !now.Before(expires) {
		return ErrCodeExpired
	}
	// Expired codes are refused by their expiry: the nonce is needed only
	// until then.
	fresh, err := k.used.Add(string(payload[8:]), expires)
	if err != nil {
		return fmt.Errorf("owner: record the login code as used: %w", err)
	}
	if !fresh {
		return ErrCodeUsed
	}
	return nil
}

// SetClock replaces the clock (tests).
func (k *Key) SetClock(now func() time.Time) { k.now = now }
