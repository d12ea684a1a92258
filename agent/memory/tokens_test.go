package memory

import (
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	tiktoken "github.com/pkoukk/tiktoken-go"
	tiktokenloader "github.com/pkoukk/tiktoken-go-loader"

	"github.com/nanobot-go/nanobot/providers"
)

var loadBPE sync.Once

// encodings loads the real BPE tokenizers from the offline tables the
// loader module embeds (no network).
func encodings(t testing.TB) map[string]*tiktoken.Tiktoken {
	t.Helper()
	loadBPE.Do(func() { tiktoken.SetBpeLoader(tiktokenloader.NewOfflineLoader()) })
	out := map[string]*tiktoken.Tiktoken{}
	for _, name := range []string{"o200k_base", "cl100k_base"} {
		enc, err := tiktoken.GetEncoding(name)
		if err != nil {
			t.Fatalf("load %s: %v", name, err)
		}
		out[name] = enc
	}
	return out
}

func corpus(t testing.TB) map[string]string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", "corpus", "*.txt"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no corpus files: %v", err)
	}
	out := map[string]string{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		out[filepath.Base(f)] = string(b)
	}
	return out
}

// TestEstimateAccuracy measures EstimateText against real tokenizers on a
// mixed English / Chinese / code / tool-output corpus and logs the error.
//
// The bound is per file, 35%: budgets keep a safety margin and stop at 50%
// of the budget, so an estimate that is a third off still never overflows a
// context window; vendors' tokenizers differ from each other by about that
// much on Chinese anyway. On the whole corpus the error must stay within 15%.
func TestEstimateAccuracy(t *testing.T) {
	const perFileBound, totalBound = 0.35, 0.15
	encs := corpus(t)
	tk := encodings(t)
	names := make([]string, 0, len(encs))
	for n := range encs {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, encName := range []string{"o200k_base", "cl100k_base"} {
		enc := tk[encName]
		var sumReal, sumEst int
		for _, name := range names {
			text := encs[name]
			real := len(enc.Encode(text, nil, nil))
			est := EstimateText(text)
			sumReal += real
			sumEst += est
			e := relErr(est, real)
			t.Logf("%-11s %-12s real=%5d estimate=%5d error=%+6.1f%%", encName, name, real, est, 100*e)
			if math.Abs(e) > perFileBound {
				t.Errorf("%s %s: error %+.1f%%, want within ±%.0f%%", encName, name, 100*e, 100*perFileBound)
			}
		}
		e := relErr(sumEst, sumReal)
		t.Logf("%-11s %-12s real=%5d estimate=%5d error=%+6.1f%%", encName, "TOTAL", sumReal, sumEst, 100*e)
		if math.Abs(e) > totalBound {
			t.Errorf("%s total: error %+.1f%%, want within ±%.0f%%", encName, 100*e, 100*totalBound)
		}
	}
}

func relErr(est, real int) float64 { return float64(est-real) / float64(real) }

// benchText is the whole corpus, five times over.
func benchText(b *testing.B) string {
	b.Helper()
	var sb strings.Builder
	for _, text := range corpus(b) {
		sb.WriteString(text)
	}
	return strings.Repeat(sb.String(), 5)
}

// BenchmarkEstimate and BenchmarkTokenizer compare the estimate with the
// real o200k_base tokenizer on the same text: the gap is why the
// consolidator does not tokenize every turn.
func BenchmarkEstimate(b *testing.B) {
	text := benchText(b)
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		EstimateText(text)
	}
}

func BenchmarkTokenizer(b *testing.B) {
	text := benchText(b)
	enc := encodings(b)["o200k_base"]
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		enc.Encode(text, nil, nil)
	}
}

func TestEstimateTokensMessages(t *testing.T) {
	text := providers.Message{Role: providers.RoleUser, Content: "hello world"}
	image := providers.Message{Role: providers.RoleUser, Parts: []providers.ContentPart{
		providers.TextPart("hello world"), providers.ImagePart("data:image/png;base64," + strings.Repeat("A", 100000)),
	}}
	call := providers.Message{Role: providers.RoleAssistant, ToolCalls: []providers.ToolCall{{
		ID: "c1", Type: "function", Function: providers.FunctionCall{Name: "exec", Arguments: `{"command":"ls"}`},
	}}}
	tool := providers.ToolDefinition{Name: "exec", Description: "Run a command", Parameters: map[string]any{"type": "object"}}
	tests := []struct {
		name     string
		msgs     []providers.Message
		tools    []providers.ToolDefinition
		min, max int
	}{
		{"empty", nil, nil, 0, 0},
		{"text", []providers.Message{text}, nil, 5, 8},
		{"image is not counted by its base64 size", []providers.Message{image}, nil, imageTokens, imageTokens + 10},
		{"tool call", []providers.Message{call}, nil, 12, 25},
		{"tool definition", nil, []providers.ToolDefinition{tool}, 12, 25},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := EstimateTokens(tt.msgs, tt.tools)
			if got < tt.min || got > tt.max {
				t.Errorf("EstimateTokens = %d, want in [%d, %d]", got, tt.min, tt.max)
			}
		})
	}
}

func BenchmarkEstimateText(b *testing.B) {
	var sb strings.Builder
	for _, text := range corpus(b) {
		sb.WriteString(text)
	}
	text := sb.String()
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		EstimateText(text)
	}
}
