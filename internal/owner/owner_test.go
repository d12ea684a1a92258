package owner_test

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/internal/owner"
)

func TestLoadCreatesOwnerOnlyTokenAndKeepsIt(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state", owner.FileName)
	k1, err := owner.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("token file mode %v, want 0600", fi.Mode().Perm())
	}
	if dir, _ := os.Stat(filepath.Dir(path)); dir.Mode().Perm() != 0o700 {
		t.Errorf("state folder mode %v, want 0700", dir.Mode().Perm())
	}
	k2, err := owner.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if k1.Token() != k2.Token() || len(k1.Token()) < 32 {
		t.Fatalf("second load got %q, first %q", k2.Token(), k1.Token())
	}
	if !k1.Check(k2.Token()) || k1.Check(k2.Token()+"x") || k1.Check("") {
		t.Error("Check accepts the wrong token or refuses the right one")
	}
}

func TestLoadReplacesATornToken(t *testing.T) {
	path := filepath.Join(t.TempDir(), owner.FileName)
	if err := os.WriteFile(path, []byte("abc"), 0o600); err != nil {
		t.Fatal(err)
	}
	k, err := owner.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	if strings.TrimSpace(string(b)) != k.Token() || len(k.Token()) < 32 {
		t.Fatalf("file %q, token %q", b, k.Token())
	}
}

func TestConcurrentLoadsAgreeOnOneToken(t *testing.T) {
	path := filepath.Join(t.TempDir(), owner.FileName)
	var wg sync.WaitGroup
	toks := make([]string, 8)
	for i := range toks {
		wg.Go(func() {
			k, err := owner.Load(path)
			if err != nil {
				t.Error(err)
				return
			}
			toks[i] = k.Token()
		})
	}
	wg.Wait()
	for _, tok := range toks[1:] {
		if tok != toks[0] {
			t.Fatalf("loads disagree: %q", toks)
		}
	}
}

func TestLoginCodeIsOneTimeAndExpires(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	k := owner.New(strings.Repeat("a", 48))
	k.SetClock(func() time.Time { return now })
	code := k.LoginCode(15 * time.Minute)

	// Another process of the owner (same token) can mint codes this one
	// accepts.
	other := owner.New(strings.Repeat("a", 48))
	other.SetClock(func() time.Time { return now })
	if err := k.Redeem(other.LoginCode(time.Minute)); err != nil {
		t.Fatalf("a code minted by another holder of the token: %v", err)
	}
	if err := k.Redeem(code); err != nil {
		t.Fatalf("first use: %v", err)
	}
	if err := k.Redeem(code); !errors.Is(err, owner.ErrCodeUsed) {
		t.Fatalf("second use: %v, want ErrCodeUsed", err)
	}
	late := k.LoginCode(time.Minute)
	now = now.Add(time.Minute)
	if err := k.Redeem(late); !errors.Is(err, owner.ErrCodeExpired) {
		t.Fatalf("expired code: %v, want ErrCodeExpired", err)
	}
}

func TestLoginCodeOfAnotherInstanceOrTamperedIsRefused(t *testing.T) {
	k := owner.New(strings.Repeat("a", 48))
	stranger := owner.New(strings.Repeat("b", 48))
	if err := k.Redeem(stranger.LoginCode(time.Minute)); !errors.Is(err, owner.ErrCodeForged) {
		t.Fatalf("another instance's code: %v, want ErrCodeForged", err)
	}
	code := k.LoginCode(time.Hour)
	// Push the expiry out by changing one payload character.
	i := len("v1.") + 3
	tampered := code[:i] + string("AB"[int(code[i])%2]) + code[i+1:]
	if tampered == code {
		t.Fatal("test did not change the code")
	}
	if err := k.Redeem(tampered); err == nil {
		t.Fatal("a tampered code was accepted")
	}
	for _, bad := range []string{"", "v1.", "v1.abc", "v2." + code[3:], "v1.!!!.###", k.Token()} {
		if err := k.Redeem(bad); err == nil {
			t.Errorf("Redeem(%q) accepted", bad)
		}
	}
}

// restart loads the key of the instance whose token is at path again, as
// the gateway does when it starts, with the clock at *now.
func restart(t *testing.T, path string, now *time.Time) *owner.Key {
	t.Helper()
	k, err := owner.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	k.SetClock(func() time.Time { return *now })
	return k
}

// nonce is the random part of a code: what the used file must not hold.
func nonce(t *testing.T, code string) []byte {
	t.Helper()
	payload, _, _ := strings.Cut(strings.TrimPrefix(code, "v1."), ".")
	b, err := base64.RawURLEncoding.DecodeString(payload)
	if err != nil || len(b) != 20 {
		t.Fatalf("code %q: payload %v", code, err)
	}
	return b[8:]
}

func usedLines(t *testing.T, dir string) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, owner.UsedFileName))
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Count(b, []byte("\n"))
}

// A code used before a restart stays used after it, until it expires; the
// file that remembers it is the owner's only and holds no code.
func TestUsedCodeStaysUsedAcrossRestart(t *testing.T) {
	dir := t.TempDir()
	path := owner.Path(dir)
	now := time.Unix(1_800_000_000, 0)
	k := restart(t, path, &now)
	code := k.LoginCode(15 * time.Minute)
	if err := k.Redeem(code); err != nil {
		t.Fatalf("first use: %v", err)
	}

	now = now.Add(14 * time.Minute)
	k = restart(t, path, &now)
	if err := k.Redeem(code); !errors.Is(err, owner.ErrCodeUsed) {
		t.Fatalf("the same code after a restart: %v, want ErrCodeUsed", err)
	}
	if err := k.Redeem(k.LoginCode(time.Minute)); err != nil {
		t.Fatalf("a new code after a restart: %v", err)
	}

	fi, err := os.Stat(filepath.Join(dir, owner.UsedFileName))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("used-codes file mode %v, want 0600", fi.Mode().Perm())
	}
	b, _ := os.ReadFile(filepath.Join(dir, owner.UsedFileName))
	n := nonce(t, code)
	for _, s := range [][]byte{n, []byte(hex.EncodeToString(n)), []byte(base64.RawURLEncoding.EncodeToString(n)), []byte(code[3:23])} {
		if bytes.Contains(b, s) {
			t.Errorf("used-codes file holds the code's nonce (%q): %q", s, b)
		}
	}
}

// Two sign-ins racing with one code: exactly one gets in.
func TestConcurrentRedeemsOfOneCode(t *testing.T) {
	k, err := owner.Load(owner.Path(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	code := k.LoginCode(time.Minute)
	errs := make([]error, 8)
	var wg sync.WaitGroup
	for i := range errs {
		wg.Go(func() { errs[i] = k.Redeem(code) })
	}
	wg.Wait()
	ok := 0
	for _, err := range errs {
		switch {
		case err == nil:
			ok++
		case !errors.Is(err, owner.ErrCodeUsed):
			t.Errorf("Redeem: %v, want nil or ErrCodeUsed", err)
		}
	}
	if ok != 1 {
		t.Fatalf("%d of %d concurrent redeems succeeded, want 1", ok, len(errs))
	}
}

// Codes that expired are dropped from the file, so it does not grow with
// every sign-in ever made.
func TestExpiredUsedCodesArePruned(t *testing.T) {
	dir := t.TempDir()
	path := owner.Path(dir)
	now := time.Unix(1_800_000_000, 0)
	k := restart(t, path, &now)
	const n = 100
	for range n {
		if err := k.Redeem(k.LoginCode(time.Minute)); err != nil {
			t.Fatal(err)
		}
	}
	if got := usedLines(t, dir); got < n {
		t.Fatalf("used-codes file holds %d lines after %d sign-ins", got, n)
	}
	now = now.Add(2 * time.Minute)
	k = restart(t, path, &now)
	if err := k.Redeem(k.LoginCode(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if got := usedLines(t, dir); got > 1 {
		t.Errorf("used-codes file holds %d lines once all but one code expired, want 1", got)
	}
}

// A crash mid-write leaves a torn last line: the next start signs in as
// before and still refuses the codes recorded whole.
func TestTornUsedFileLoads(t *testing.T) {
	dir := t.TempDir()
	path := owner.Path(dir)
	now := time.Unix(1_800_000_000, 0)
	k := restart(t, path, &now)
	code := k.LoginCode(time.Minute)
	if err := k.Redeem(code); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(filepath.Join(dir, owner.UsedFileName), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = f.WriteString("~0badf00d 3f9a")
	_ = f.Close()

	k = restart(t, path, &now)
	if err := k.Redeem(code); !errors.Is(err, owner.ErrCodeUsed) {
		t.Fatalf("the code recorded before the torn line: %v, want ErrCodeUsed", err)
	}
	if err := k.Redeem(k.LoginCode(time.Minute)); err != nil {
		t.Fatalf("a new code after a torn file: %v", err)
	}

	// A file that is garbage throughout loads too.
	if err := os.WriteFile(filepath.Join(dir, owner.UsedFileName), []byte("not a record\n\x00\x01\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	k = restart(t, path, &now)
	if err := k.Redeem(k.LoginCode(time.Minute)); err != nil {
		t.Fatalf("a new code after a garbage file: %v", err)
	}
}

// When the use of a code cannot be recorded, the sign-in is refused, and
// the code still works once recording works again.
func TestRedeemRefusedWhenTheUseCannotBeRecorded(t *testing.T) {
	dir := t.TempDir()
	path := owner.Path(dir)
	now := time.Unix(1_800_000_000, 0)
	k := restart(t, path, &now)
	used := filepath.Join(dir, owner.UsedFileName)
	if err := os.Mkdir(used, 0o700); err != nil { // unreadable and unwritable as a file, even for root
		t.Fatal(err)
	}
	code := k.LoginCode(time.Minute)
	err := k.Redeem(code)
	if err == nil {
		t.Fatal("a code was accepted while its use could not be recorded")
	}
	if owner.IsCodeError(err) {
		t.Errorf("Redeem: %v, want a storage error, not one about the code", err)
	}
	if err := os.Remove(used); err != nil {
		t.Fatal(err)
	}
	if err := k.Redeem(code); err != nil {
		t.Fatalf("the same code once its use can be recorded: %v", err)
	}
}
