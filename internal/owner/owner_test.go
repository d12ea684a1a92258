package owner_test

import (
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
