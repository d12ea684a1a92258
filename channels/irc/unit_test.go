package irc

import (
	"context"
	"strings"
	"testing"
	"testing/synctest"
	"time"
	"unicode/utf8"

	"github.com/ergochat/irc-go/ircmsg"

	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/channels"
	"github.com/nanobot-go/nanobot/gateway/relay"
)

func TestSplitLines(t *testing.T) {
	tests := []struct {
		name   string
		text   string
		budget int
		want   []string
	}{
		{"short", "hello", 100, []string{"hello"}},
		{"newlines and blank lines", "a\r\nb\n\n\rc  ", 100, []string{"a", "b", "c"}},
		{"cut before a space", "aaaa bbbb cccc", 10, []string{"aaaa bbbb", " cccc"}},
		{"no space: hard cut", "abcdefghij", 4, []string{"abcd", "efgh", "ij"}},
		{"utf-8 boundary", "ééééé", 5, []string{"éé", "éé", "é"}},
		{"emoji boundary", "🙂🙂", 6, []string{"🙂", "🙂"}},
		{"nul removed, invalid replaced", "a\x00b\xff", 100, []string{"ab\uFFFD"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := splitLines(tc.text, tc.budget)
			if strings.Join(got, "|") != strings.Join(tc.want, "|") {
				t.Errorf("splitLines(%q, %d) = %q, want %q", tc.text, tc.budget, got, tc.want)
			}
			for _, l := range got {
				if len(l) > max(tc.budget, utf8.UTFMax) || !utf8.ValidString(l) {
					t.Errorf("line %q over budget or not UTF-8", l)
				}
			}
		})
	}
}

func FuzzSplitLines(f *testing.F) {
	f.Add("hello world, this is a long line", 8)
	f.Add("ü🙂\n\nx y", 5)
	f.Fuzz(func(t *testing.T, text string, budget int) {
		budget = max(budget%600, 1)
		var want strings.Builder
		clean := strings.ToValidUTF8(strings.ReplaceAll(text, "\x00", ""), "\uFFFD")
		for line := range strings.SplitSeq(strings.ReplaceAll(strings.ReplaceAll(clean, "\r\n", "\n"), "\r", "\n"), "\n") {
			want.WriteString(strings.TrimRight(line, " "))
		}
		var got strings.Builder
		for _, l := range splitLines(text, budget) {
			if l == "" || len(l) > max(budget, utf8.UTFMax) || !utf8.ValidString(l) || strings.ContainsAny(l, "\r\n\x00") {
				t.Fatalf("bad line %q (budget %d)", l, budget)
			}
			got.WriteString(l)
		}
		if got.String() != want.String() {
			t.Fatalf("lines give %q, want %q", got.String(), want.String())
		}
	})
}

// TestLineBudget: the relayed line, with the longest user and host the
// bot assumes, fits 512 bytes exactly at the budget.
func TestLineBudget(t *testing.T) {
	ch, err := New(Config{Server: "irc.example.test", Nick: "nanobot", TLS: true, FloodBurst: 4, FloodIntervalMs: 1}, channels.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	cn := &conn{nick: "nanobot"}
	b := ch.lineBudget(cn, "#channel")
	relayed := ":nanobot!" + strings.Repeat("u", assumeUser) + "@" + strings.Repeat("h", assumeHost) + " PRIVMSG #channel :" + strings.Repeat("x", b) + "\r\n"
	if len(relayed) != 512 {
		t.Errorf("relayed line at the budget is %d bytes, want 512", len(relayed))
	}
	cn.learnMask("someone", strings.Repeat("h", 80)) // a host longer than assumed counts
	if b2 := ch.lineBudget(cn, "#channel"); b2 != b-(80-assumeHost) {
		t.Errorf("budget with an 80-byte host = %d, want %d", b2, b-(80-assumeHost))
	}
}

func TestAddressedTo(t *testing.T) {
	tests := []struct {
		text, rest string
		ok         bool
	}{
		{"nanobot: hi", "hi", true},
		{"NanoBot, hi", "hi", true},
		{"@nanobot: hi", "hi", true},
		{"  nanobot:hi", "hi", true},
		{"hey nanobot!", "hey nanobot!", true},
		{"nanobot_: hi", "hi", true}, // the nick the bot runs under
		{"nanobotty: hi", "nanobotty: hi", false},
		{"xnanobot", "xnanobot", false},
		{"nano bot", "nano bot", false},
		{"nanobot", "nanobot", true},
	}
	for _, tc := range tests {
		rest, ok := addressedTo(tc.text, "nanobot_", "nanobot")
		if rest != tc.rest || ok != tc.ok {
			t.Errorf("addressedTo(%q) = %q, %v; want %q, %v", tc.text, rest, ok, tc.rest, tc.ok)
		}
	}
}

func TestSenderID(t *testing.T) {
	n := ircmsg.NUH{Name: "evil|alice", User: "~e", Host: "example.test"}
	id := senderID(n, "")
	if id != "evil%7Calice|evil%7Calice!~e@example.test" {
		t.Errorf("senderID = %q", id)
	}
	// A nick with | must not pass for the part after it.
	g := &relay.Gate{AllowFrom: map[string][]string{"irc": {"alice"}}, Next: &inbox{}}
	if err := g.Deliver(context.Background(), inboundFrom(id)); err == nil {
		t.Error("evil|alice passed allowFrom [alice]")
	}
	if got := senderID(ircmsg.NUH{Name: "bob", User: "b", Host: "h"}, "bobacct"); got != "bob|bob!b@h|account:bobacct" {
		t.Errorf("senderID with account = %q", got)
	}
}

func TestAltNick(t *testing.T) {
	for i, want := range []string{"nanobot", "nanobot_", "nanobot__", "nanobot2", "nanobot3"} {
		if got := altNick("nanobot", i); got != want {
			t.Errorf("altNick(nanobot, %d) = %q, want %q", i, got, want)
		}
	}
	if got := altNick("ninechars", 2); got != "ninecha__" || len(got) > 9 {
		t.Errorf("altNick(ninechars, 2) = %q, want it kept to 9 characters", got)
	}
	if got := altNick("a-very-long-nick", 1); got != "a-very-long-nick_" {
		t.Errorf("altNick(long, 1) = %q", got)
	}
}

func TestStripFormatting(t *testing.T) {
	in := "\x02bold\x02 \x0304,12red\x03 \x1ditalic\x0f \x03plain \x0412ab34x"
	if got := stripFormatting(in); got != "bold red italic plain x" {
		t.Errorf("stripFormatting = %q", got)
	}
}

func TestValidate(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Nick = "1bad nick"
	cfg.SASL.User = "only-user"
	cfg.Channels = []ChannelConfig{{Name: "nochan"}, {Name: "#ok", Key: "a b"}}
	cfg.FloodBurst = 0
	err := cfg.Validate()
	if err == nil {
		t.Fatal("Validate accepted a broken config")
	}
	for _, want := range []string{"server: required", "nick:", "sasl: give both", "channels[0].name", "channels[1].key", "floodBurst"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
}

// TestBucket: four lines go at once, then one per interval, and a waiter
// gives up when its context ends.
func TestBucket(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBucket(4, 2*time.Second)
		start := time.Now()
		for range 4 {
			if err := b.take(t.Context()); err != nil {
				t.Fatal(err)
			}
		}
		if d := time.Since(start); d != 0 {
			t.Errorf("the burst took %s, want none", d)
		}
		if b.tryTake() {
			t.Error("tryTake succeeded with the burst spent")
		}
		for i := 1; i <= 3; i++ {
			if err := b.take(t.Context()); err != nil {
				t.Fatal(err)
			}
			if d, want := time.Since(start), time.Duration(i)*2*time.Second; d != want {
				t.Errorf("line %d after %s, want %s", 4+i, d, want)
			}
		}
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		if err := b.take(ctx); err == nil {
			t.Error("take returned a token before one was due")
		}
	})
}

func inboundFrom(sender string) bus.Inbound {
	return bus.Inbound{Channel: "irc", SenderID: sender, ChatID: "evil|alice", Content: "hi", IsGroup: true}
}
