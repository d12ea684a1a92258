package recall

import (
	"strings"
	"unicode"
)

// terms splits text into search terms: lower-cased runs of letters and
// digits for scripts that separate words with spaces, and for Chinese,
// Japanese and Korean (no spaces between words) each pair of adjacent
// characters, plus the character alone when it stands by itself. Very
// common English words are dropped; they only dilute a score.
func terms(text string) []string {
	var out []string
	var word []rune
	var cjk []rune
	flushWord := func() {
		if len(word) > 0 {
			w := string(word)
			if !stop[w] {
				out = append(out, w)
			}
			word = word[:0]
		}
	}
	flushCJK := func() {
		switch len(cjk) {
		case 0:
		case 1:
			out = append(out, string(cjk))
		default:
			for i := 0; i+1 < len(cjk); i++ {
				out = append(out, string(cjk[i:i+2]))
			}
		}
		cjk = cjk[:0]
	}
	for _, r := range text {
		switch {
		case isCJK(r):
			flushWord()
			cjk = append(cjk, r)
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			flushCJK()
			word = append(word, unicode.ToLower(r))
		default:
			flushWord()
			flushCJK()
		}
	}
	flushWord()
	flushCJK()
	return out
}

func isCJK(r rune) bool {
	return unicode.Is(unicode.Han, r) || unicode.Is(unicode.Hiragana, r) || unicode.Is(unicode.Katakana, r) || unicode.Is(unicode.Hangul, r)
}

// stop are English words too common to tell documents apart.
var stop = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields("a an and are as at be but by did do for from had has have i in is it its me my of on or so that the this to was we were what with you your") {
		m[w] = true
	}
	return m
}()
