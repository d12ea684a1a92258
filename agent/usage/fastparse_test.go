package usage

import (
	"bytes"
	"math"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func BenchmarkParseLine(b *testing.B) {
	c := 0.0042
	r := Record{Time: time.UnixMilli(1767225600123), Agent: "main", Channel: "telegram", Chat: "123456789", Sender: "987654",
		Session: "telegram:123456789", Source: "user", Provider: "openai", Model: "gpt-4o-mini", Input: 12345, CacheRead: 800,
		Output: 321, Latency: 1234 * time.Millisecond, Outcome: OutcomeOK, CostUSD: &c}
	line := appendLine(nil, &r)
	line = line[:len(line)-1]
	b.SetBytes(int64(len(line)))
	var raw rawRecord
	b.Run("fast", func(b *testing.B) {
		for b.Loop() {
			if !parseFast(line, &raw) {
				b.Fatal("not parsed")
			}
		}
	})
	b.Run("generic", func(b *testing.B) {
		for b.Loop() {
			if parseLine(line, &raw) != nil {
				b.Fatal("not parsed")
			}
		}
	})
}

// The fast path reads what appendLine writes exactly as parseLine does,
// and hands everything else (escapes, other key orders, odd numbers)
// back to it.
func TestFastParseMatchesParseLine(t *testing.T) {
	costs := []*float64{nil, ptr(0), ptr(0.0042), ptr(123.456), ptr(1e-7), ptr(0.1 + 0.2), ptr(1234567.891234567), ptr(3e21)}
	strs := []string{"", "main", "a\"b", "back\\slash", "ü|name", "line\nbreak", "<tag>&"}
	n := 0
	for i, c := range costs {
		for j, s := range strs {
			r := Record{Time: time.UnixMilli(1767225600123 + int64(i*j)), Agent: s, Channel: "web", Chat: strs[(j+1)%len(strs)],
				Sender: "u", Session: "web:" + s, Source: []string{"", "cron", "heartbeat"}[j%3], Provider: "openai", Model: s,
				Input: int64(i * 1000), CacheRead: int64(j), CacheWrite: 7, Output: -int64(i), Reasoning: 3, Latency: time.Duration(j) * time.Millisecond,
				Outcome: []string{OutcomeOK, "http_500"}[i%2], Estimated: j%2 == 0, CostUSD: c, Kind: []string{"", KindImage}[i%2]}
			line := appendLine(nil, &r)
			line = line[:len(line)-1]
			var fast, slow rawRecord
			if err := parseLine(line, &slow); err != nil {
				t.Fatalf("parseLine(%s): %v", line, err)
			}
			plain := !bytes.ContainsAny(line, `\`)
			ok := parseFast(line, &fast)
			if plain && !ok {
				t.Errorf("parseFast refused a canonical line: %s", line)
			}
			if ok {
				n++
				if diff := cmp.Diff(slow.record(), fast.record()); diff != "" {
					t.Errorf("%s (-parseLine +parseFast):\n%s", line, diff)
				}
			}
		}
	}
	if n == 0 {
		t.Fatal("the fast path took no line")
	}
	for _, line := range []string{
		`{"ts":1,"agent":"a"}`,
		`{"agent":"a","ts":1}`,
		`{"ts": 1,"agent":"a","ch":"c","chat":"","sender":"","session":"","src":"","provider":"","model":"","in":1,"cr":0,"cw":0,"out":0,"rsn":0,"ms":0,"outcome":"ok"}`,
		`{"ts":1,"agent":"a","ch":"c","chat":"","sender":"","session":"","src":"","provider":"","model":"","in":1,"cr":0,"cw":0,"out":0,"rsn":0,"ms":0,"outcome":"ok","usd":null}`,
		`{"ts":1,"agent":"a","ch":"c","chat":"","sender":"","session":"","src":"","provider":"","model":"","in":1,"cr":0,"cw":0,"out":0,"rsn":0,"ms":0,"outcome":"ok","later":1}`,
		`{"ts":99999999999999999999,"agent":"a","ch":"c","chat":"","sender":"","session":"","src":"","provider":"","model":"","in":1,"cr":0,"cw":0,"out":0,"rsn":0,"ms":0,"outcome":"ok"}`,
	} {
		var fast rawRecord
		if parseFast([]byte(line), &fast) {
			t.Errorf("parseFast took a line that is not canonical: %s", line)
		}
	}
}

func ptr(f float64) *float64 { return &f }

// Whatever the fast path accepts, parseLine reads the same way.
func FuzzParseFast(f *testing.F) {
	c := 0.5
	r := Record{Time: time.UnixMilli(1), Agent: "a", Outcome: OutcomeOK, CostUSD: &c, Kind: KindImage, Estimated: true}
	f.Add(appendLine(nil, &r))
	f.Add([]byte(`{"ts":1,"agent":"a","ch":"c","chat":"","sender":"","session":"","src":"","provider":"","model":"","in":1,"cr":0,"cw":0,"out":0,"rsn":0,"ms":0,"outcome":"ok","usd":1e-5}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		var fast, slow rawRecord
		if !parseFast(line, &fast) {
			return
		}
		if err := parseLine(line, &slow); err != nil {
			t.Fatalf("parseFast took %q, parseLine says %v", line, err)
		}
		if diff := cmp.Diff(slow.record(), fast.record()); diff != "" {
			t.Errorf("%q (-parseLine +parseFast):\n%s", line, diff)
		}
	})
}

// The decimal shortcut gives strconv's value, bit for bit.
func TestFastFloat(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 200_000 {
		var v float64
		switch rng.IntN(3) {
		case 0:
			v = float64(rng.IntN(1_000_000)) / 1e6 // typical costs
		case 1:
			v = rng.Float64() * math.Pow(10, float64(rng.IntN(12)-8))
		default:
			v = math.Round(rng.Float64()*1e9) / math.Pow(10, float64(rng.IntN(15)))
		}
		s := strconv.AppendFloat(nil, v, 'g', -1, 64)
		p := fastParser{b: append(s, '}')}
		got, ok := p.float()
		want, _ := strconv.ParseFloat(string(s), 64)
		if !ok || math.Float64bits(got) != math.Float64bits(want) {
			t.Fatalf("float(%s) = %v, %v; want %v", s, got, ok, want)
		}
	}
}
