package memory

import (
	"encoding/json"
	"unicode"
	"unicode/utf8"

	"github.com/nanobot-go/nanobot/providers"
)

// Token accounting constants. The estimate is calibrated against OpenAI's
// o200k_base and cl100k_base BPE tokenizers on testdata/corpus (see
// TestEstimateAccuracy); other vendors' tokenizers land in the same range
// for English and code and lower for Chinese, so the estimate errs on the
// large side there, which is the safe side for a budget.
const (
	// messageOverhead is what a chat message costs besides its text (role
	// and separator tokens).
	messageOverhead = 4
	// toolCallOverhead is the framing of one tool call (id, type, name).
	toolCallOverhead = 8
	// toolDefinitionOverhead is the framing of one tool definition.
	toolDefinitionOverhead = 10
	// imageTokens is charged per image part instead of counting its base64
	// data: vendors bill images by size, typically 500-1600 tokens.
	imageTokens = 1000
)

// Calibrated weights, in tokens. Letters are counted per word so that
// common short words cost one token and long identifiers split.
const (
	wordBaseTokens  = 1.0 // a run of ASCII letters up to wordWholeLen
	wordWholeLen    = 6   // letters a word may have and stay one token
	lettersPerToken = 3.5 // letters per extra token beyond wordWholeLen
	digitsPerToken  = 3.0 // BPE vocabularies group digits by three
	punctTokens     = 0.7 // ASCII punctuation merges in pairs now and then
	spaceRunTokens  = 1.0 // indentation, newlines: one token per run
	cjkTokens       = 0.9 // Han, kana, hangul, full-width punctuation
	otherRuneTokens = 0.5 // accented Latin, Cyrillic, Greek, ...
	symbolTokens    = 1.5 // emoji and other symbols take several bytes
)

// EstimateTokens approximates how many prompt tokens msgs and tools cost.
// It runs in time linear in the text (no tokenizer tables), so it is cheap
// enough to call before every turn.
func EstimateTokens(msgs []providers.Message, tools []providers.ToolDefinition) int {
	n := 0
	for _, m := range msgs {
		n += messageOverhead
		if len(m.Parts) == 0 {
			n += EstimateText(m.Content)
		}
		for _, p := range m.Parts {
			switch {
			case p.ImageURL != nil:
				n += imageTokens
			default:
				n += EstimateText(p.Text)
			}
		}
		n += EstimateText(m.ReasoningContent)
		for _, tb := range m.ThinkingBlocks {
			n += EstimateText(tb.Thinking)
		}
		for _, tc := range m.ToolCalls {
			n += toolCallOverhead + EstimateText(tc.Function.Name) + EstimateText(tc.Function.Arguments)
		}
	}
	for _, t := range tools {
		n += toolDefinitionOverhead + EstimateText(t.Name) + EstimateText(t.Description)
		if len(t.Parameters) > 0 {
			if b, err := json.Marshal(t.Parameters); err == nil {
				n += EstimateText(string(b))
			}
		}
	}
	return n
}

// EstimateText approximates the token count of s.
func EstimateText(s string) int {
	var (
		total float64
		i     int
	)
	for i < len(s) {
		c := s[i]
		switch {
		case isASCIILetter(c):
			j := i + 1
			for j < len(s) && isASCIILetter(s[j]) {
				j++
			}
			total += wordTokens(j - i)
			i = j
		case c >= '0' && c <= '9':
			j := i + 1
			for j < len(s) && s[j] >= '0' && s[j] <= '9' {
				j++
			}
			total += ceilDiv(j-i, digitsPerToken)
			i = j
		case c == ' ' && i+1 < len(s) && s[i+1] != ' ' && s[i+1] != '\n' && s[i+1] != '\t':
			// A single space before a word or symbol is part of its token.
			i++
		case c == ' ' || c == '\n' || c == '\t' || c == '\r':
			j := i + 1
			for j < len(s) && (s[j] == ' ' || s[j] == '\n' || s[j] == '\t' || s[j] == '\r') {
				j++
			}
			total += spaceRunTokens
			i = j
		case c < utf8.RuneSelf:
			total += punctTokens
			i++
		default:
			r, size := utf8.DecodeRuneInString(s[i:])
			total += runeTokens(r)
			i += size
		}
	}
	return int(total + 0.5)
}

func isASCIILetter(c byte) bool { return c|0x20 >= 'a' && c|0x20 <= 'z' }

func wordTokens(n int) float64 {
	if n <= wordWholeLen {
		return wordBaseTokens
	}
	return wordBaseTokens + float64(n-wordWholeLen)/lettersPerToken
}

func ceilDiv(n int, per float64) float64 {
	t := float64(n) / per
	if t != float64(int(t)) {
		return float64(int(t) + 1)
	}
	return t
}

func runeTokens(r rune) float64 {
	switch {
	case unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana, unicode.Hangul),
		r >= 0x3000 && r <= 0x303f, // CJK punctuation
		r >= 0xff00 && r <= 0xffef: // full-width forms
		return cjkTokens
	case unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsSpace(r):
		return otherRuneTokens
	default:
		return symbolTokens
	}
}
