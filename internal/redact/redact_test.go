package redact

import (
	"fmt"
	"strings"
	"sync"
	"testing"
)

func TestNilRedactorChangesNothing(t *testing.T) {
	var r *Redactor
	r.Add("whatever-secret")
	if got := r.String("sk-abcdefghijklmnopqrstuvwxyz"); got != "sk-abcdefghijklmnopqrstuvwxyz" {
		t.Errorf("nil redactor changed text: %q", got)
	}
	if r.MaxLen() != 0 || r.Stream().Next("abc") != "abc" {
		t.Error("nil redactor holds text back")
	}
}

func TestExactSecrets(t *testing.T) {
	r := New("config-key-123", "ab", "config-key-123-longer")
	r.Add("runtime-token-1")
	tests := []struct{ in, want string }{
		{"use config-key-123 now", "use " + Mask + " now"},
		{"config-key-123-longer", Mask}, // longest first: no "[REDACTED]-longer"
		{"got runtime-token-1, ab stays", "got " + Mask + ", ab stays"},
		{"nothing here", "nothing here"},
	}
	for _, tt := range tests {
		if got := r.Secrets(tt.in); got != tt.want {
			t.Errorf("Secrets(%q) = %q, want %q", tt.in, got, tt.want)
		}
		if got := r.String(tt.in); got != tt.want {
			t.Errorf("String(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	if r.MaxLen() != len("config-key-123-longer") {
		t.Errorf("MaxLen %d", r.MaxLen())
	}
}

func TestRuntimeSecretsAreBounded(t *testing.T) {
	r := New("fixed-secret")
	for i := range 100 {
		r.Add(fmt.Sprintf("rotating-%03d", i))
	}
	got := r.String("fixed-secret rotating-099 rotating-000")
	if want := Mask + " " + Mask + " rotating-000"; got != want {
		t.Errorf("got %q, want %q (config secrets stay, the newest runtime ones are kept)", got, want)
	}
}

func TestKeptSecretsOutliveRotation(t *testing.T) {
	r := New("fixed-secret")
	r.Keep("instance-token-0123456789")
	for i := range 100 {
		r.Add(fmt.Sprintf("rotating-%03d", i))
	}
	if got, want := r.String("instance-token-0123456789 rotating-000"), Mask+" rotating-000"; got != want {
		t.Errorf("got %q, want %q (a kept secret is never dropped)", got, want)
	}
	var nilR *Redactor
	nilR.Keep("no-op-on-nil") // must not panic
}

func TestShapes(t *testing.T) {
	r := New()
	for _, tt := range []struct{ in, value string }{
		{"sk-abcdefghijklmnopqrstuvwxyz", "abcdefghijklmnop"},
		{"sk-ant-api03-abcdefghijklmnop", "abcdefghijklmnop"},
		{"xoxb-1234567890-abcdefghij", "1234567890"},
		{"xapp-1-A0123456789-abcdef", "A0123456789"},
		{"ghp_abcdefghijklmnopqrstuvwxyz0123", "abcdefghijklmnop"},
		{"AIzaSyA-abcdefghijklmnopqrstuvwxyz01", "abcdefghijklmnop"},
		{"123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw0", "AAHdqTcv"},
		{"https://api.telegram.org/bot123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw0/getMe", "AAHdqTcv"},
		{"Authorization: Bearer abcdefghijklmnop.qrs", "abcdefghijklmnop"},
		{"https://x.example/search?q=go&api_key=zzzzzzzz&n=1", "zzzzzzzz"},
		{"https://x.example/cb?access_token=zzzzzzzz", "zzzzzzzz"},
		{"https://x.example/oauth?client_secret=zzzzzzzz&refresh_token=yyyyyyyy", "zzzzzzzz"},
		{"https://x.example/oauth?client_secret=zzzzzzzz&refresh_token=yyyyyyyy", "yyyyyyyy"},
		{"https://acct.blob.example/c/f?sv=2024&sig=zzzzzzzz%3D", "zzzzzzzz"},
	} {
		got := r.String("before " + tt.in + " after")
		if strings.Contains(got, tt.value) || !strings.Contains(got, Mask) {
			t.Errorf("String(%q) = %q: the credential survives", tt.in, got)
		}
		if !strings.HasPrefix(got, "before ") || !strings.HasSuffix(got, " after") {
			t.Errorf("String(%q) = %q: took too much", tt.in, got)
		}
	}
	// Query parameters keep their name; text that only looks close stays.
	if got := r.String("a?q=go&token=abc"); got != "a?q=go&token="+Mask {
		t.Errorf("query: %q", got)
	}
	for _, keep := range []string{"at 12:30 the ghost_town sk-short", "bearer of news", "x=1 and y=2", "https://x.example/?tokens_total=5"} {
		if got := r.String(keep); got != keep {
			t.Errorf("String(%q) = %q, want it unchanged", keep, got)
		}
	}
	// Secrets (tool results, replies) leaves shapes alone.
	if got := r.Secrets("sk-abcdefghijklmnopqrstuvwxyz"); got != "sk-abcdefghijklmnopqrstuvwxyz" {
		t.Errorf("Secrets masked a shape: %q", got)
	}
}

func TestStreamSecretSplitAcrossPieces(t *testing.T) {
	const key = "sk-live-0123456789abcdef"
	r := New(key)
	text := "the key is " + key + " — keep it safe. Und nochmal: " + key + "!"
	// Every way of cutting the text into two, three and many pieces.
	cuts := [][]int{}
	for i := 1; i < len(text); i++ {
		cuts = append(cuts, []int{i})
		if i+7 < len(text) {
			cuts = append(cuts, []int{i, i + 7})
		}
	}
	every := []int{}
	for i := 1; i < len(text); i++ {
		every = append(every, i)
	}
	cuts = append(cuts, every)
	for _, cut := range cuts {
		s := r.Stream()
		var out strings.Builder
		prev := 0
		for _, c := range append(cut, len(text)) {
			piece := s.Next(text[prev:c])
			if strings.Contains(piece, "0123456789") {
				t.Fatalf("cut %v: a piece shows part of the key: %q", cut, piece)
			}
			out.WriteString(piece)
			prev = c
		}
		out.WriteString(s.Flush())
		if want := r.Secrets(text); out.String() != want {
			t.Fatalf("cut %v: stream gives %q, want %q", cut, out.String(), want)
		}
	}
}

func TestStreamHoldsOnlyWhatCouldBeASecret(t *testing.T) {
	r := New("abcdefgh")
	s := r.Stream()
	if got := s.Next("hello world, "); got != "hello " {
		t.Errorf("first piece emits %q, want all but the last 7 bytes", got)
	}
	if got := s.Next("ok") + s.Flush(); got != "world, ok" {
		t.Errorf("rest %q", got)
	}
	// Multi-byte characters are never split.
	s = r.Stream()
	got := s.Next("日本語のテキスト")
	if !strings.HasPrefix("日本語のテキスト", got) || strings.ToValidUTF8(got, "?") != got {
		t.Errorf("split a character: %q", got)
	}
}

func TestConcurrentAddAndRedact(t *testing.T) {
	r := New("fixed-secret")
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Go(func() {
			for n := range 200 {
				r.Add(fmt.Sprintf("token-%d-%03d", i, n))
				if got := r.String("fixed-secret"); got != Mask {
					t.Errorf("got %q", got)
					return
				}
			}
		})
	}
	wg.Wait()
}

// toolOutput is 4 KB of ordinary command output: paths, times, key=value
// pairs, no secret.
func toolOutput() string {
	var b strings.Builder
	for i := 0; b.Len() < 4096; i++ {
		fmt.Fprintf(&b, "drwxr-xr-x  2 user staff  %4d Mar 12 10:%02d src/pkg%02d/file_%d.go status=ok\n", 64*i, i%60, i, i)
	}
	return b.String()[:4096]
}

func BenchmarkNoSecret4KB(b *testing.B) {
	secrets := []string{"sk-or-v1-0123456789abcdef0123456789abcdef", "xoxb-1111111111-2222222222-abcdefghijklmnop", "123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw0"}
	for i := range 10 {
		secrets = append(secrets, fmt.Sprintf("channel-secret-%02d-abcdefgh", i))
	}
	r := New(secrets...)
	in := toolOutput()
	b.Run("Secrets", func(b *testing.B) {
		b.SetBytes(int64(len(in)))
		b.ReportAllocs()
		for b.Loop() {
			if r.Secrets(in) != in {
				b.Fatal("changed")
			}
		}
	})
	b.Run("String", func(b *testing.B) {
		b.SetBytes(int64(len(in)))
		b.ReportAllocs()
		for b.Loop() {
			if r.String(in) != in {
				b.Fatal("changed")
			}
		}
	})
	b.Run("regexp-only", func(b *testing.B) {
		b.SetBytes(int64(len(in)))
		for b.Loop() {
			tokenShapes.ReplaceAllString(in, Mask)
		}
	})
}
