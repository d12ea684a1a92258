package webui

import (
	"html"
	"strings"
	"unicode"
	"unicode/utf8"
)

// The workbench highlights the code blocks of stored messages with this
// small scanner rather than a full lexer library: what a chat shows is
// short snippets, and colouring comments, strings, numbers and keywords
// is what makes them readable. chroma, tried first, parsed its 279 lexer
// and 70 style definitions at every start of every nanobot command (about
// 100 ms and 4.7 MB of allocations) and weighed about 4 MiB in the
// binary — the largest start-up cost the gateway had (issue 28).
//
// highlight is a pure function; it is safe for concurrent use.

// lang describes the syntax the scanner needs from one language family.
type lang struct {
	line     []string // line comment openers
	block    [2]string
	quotes   string // string delimiters
	triple   bool   // """ and ''' strings (Python)
	raw      bool   // `raw` strings (Go, JavaScript)
	keywords map[string]bool
}

func words(s string) map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(s) {
		m[w] = true
	}
	return m
}

var (
	cLike = func(kw string) lang {
		return lang{line: []string{"//"}, block: [2]string{"/*", "*/"}, quotes: `"'`, keywords: words(kw)}
	}
	goLang = func() lang {
		l := cLike(`break case chan const continue default defer else fallthrough for func go goto if import
			interface map package range return select struct switch type var true false nil iota`)
		l.raw = true
		return l
	}()
	jsLang = func() lang {
		l := cLike(`async await break case catch class const continue debugger default delete do else export
			extends finally for from function if import in instanceof let new of return static super switch
			this throw try typeof var void while yield true false null undefined interface type enum
			implements private public protected readonly as`)
		l.raw = true
		return l
	}()
	pyLang = lang{line: []string{"#"}, quotes: `"'`, triple: true, keywords: words(`and as assert async await break
		class continue def del elif else except finally for from global if import in is lambda nonlocal not
		or pass raise return try while with yield True False None self match case`)}
	shLang = lang{line: []string{"#"}, quotes: `"'`, keywords: words(`if then else elif fi for while until do done
		case esac in function return export local readonly set unset echo exit`)}
	sqlLang = lang{line: []string{"--"}, block: [2]string{"/*", "*/"}, quotes: `'"`, keywords: words(`select from where
		insert into values update set delete create table drop alter add index join left right inner outer on
		group by order having limit offset as and or not null is in like distinct union all primary key
		references default SELECT FROM WHERE INSERT INTO VALUES UPDATE SET DELETE CREATE TABLE DROP ALTER ADD
		INDEX JOIN LEFT RIGHT INNER OUTER ON GROUP BY ORDER HAVING LIMIT OFFSET AS AND OR NOT NULL IS IN LIKE
		DISTINCT UNION ALL PRIMARY KEY REFERENCES DEFAULT`)}
	yamlLang = lang{line: []string{"#"}, quotes: `"'`, keywords: words(`true false null yes no on off`)}
	jsonLang = lang{quotes: `"`, keywords: words(`true false null`)}

	langs = map[string]lang{
		"go": goLang, "golang": goLang,
		"js": jsLang, "javascript": jsLang, "ts": jsLang, "typescript": jsLang, "jsx": jsLang, "tsx": jsLang,
		"py": pyLang, "python": pyLang, "python3": pyLang,
		"sh": shLang, "bash": shLang, "shell": shLang, "zsh": shLang, "console": shLang,
		"sql": sqlLang, "yaml": yamlLang, "yml": yamlLang, "toml": yamlLang, "ini": yamlLang,
		"json": jsonLang, "jsonc": jsonLang,
		"c": cLike(`auto break case char const continue default do double else enum extern float for goto if
			int long register return short signed sizeof static struct switch typedef union unsigned void
			volatile while NULL`),
		"rust": cLike(`as async await break const continue crate dyn else enum extern false fn for if impl in let
			loop match mod move mut pub ref return self Self static struct super trait true type unsafe use where
			while Some None Ok Err`),
	}
)

func init() {
	java := cLike(`abstract boolean break byte case catch char class const continue default do double else enum
		extends final finally float for if implements import instanceof int interface long native new null
		package private protected public return short static super switch synchronized this throw throws try
		void volatile while true false var val fun when object override string bool namespace using`)
	for _, n := range []string{"java", "kotlin", "kt", "cs", "csharp", "cpp", "c++", "cc", "h", "hpp", "swift", "scala", "php", "dart"} {
		langs[n] = java
	}
	rust := langs["rust"]
	rust.quotes = `"` // 'a is a lifetime
	langs["rust"], langs["rs"] = rust, rust
}

// highlight renders code as the inner HTML of a <code> element: text
// escaped, comments, strings, numbers and keywords wrapped in spans of
// classes c, s, n and k. An unknown language gets the text escaped only.
func highlight(language, code string) string {
	l, ok := langs[strings.ToLower(strings.TrimSpace(language))]
	if !ok {
		return html.EscapeString(code)
	}
	var b strings.Builder
	b.Grow(len(code) + len(code)/4)
	span := func(class, text string) {
		b.WriteString(`<span class="` + class + `">`)
		b.WriteString(html.EscapeString(text))
		b.WriteString("</span>")
	}
	for i := 0; i < len(code); {
		rest := code[i:]
		if n := l.comment(rest); n > 0 {
			span("c", rest[:n])
			i += n
			continue
		}
		if n := l.str(rest); n > 0 {
			span("s", rest[:n])
			i += n
			continue
		}
		r, size := utf8.DecodeRuneInString(rest)
		switch {
		case isIdentStart(r):
			n := identLen(rest)
			if word := rest[:n]; l.keywords[word] {
				span("k", word)
			} else {
				b.WriteString(html.EscapeString(word))
			}
			i += n
		case r >= '0' && r <= '9':
			n := identLen(rest) // digits, hex letters, underscores
			for n < len(rest) && rest[n] == '.' && n+1 < len(rest) && rest[n+1] >= '0' && rest[n+1] <= '9' {
				n += 1 + identLen(rest[n+1:])
			}
			span("n", rest[:n])
			i += n
		default:
			b.WriteString(html.EscapeString(rest[:size]))
			i += size
		}
	}
	return b.String()
}

// comment returns the length of the comment s starts with, or 0.
func (l lang) comment(s string) int {
	for _, open := range l.line {
		if strings.HasPrefix(s, open) {
			if n := strings.IndexByte(s, '\n'); n >= 0 {
				return n
			}
			return len(s)
		}
	}
	if l.block[0] != "" && strings.HasPrefix(s, l.block[0]) {
		if n := strings.Index(s[len(l.block[0]):], l.block[1]); n >= 0 {
			return len(l.block[0]) + n + len(l.block[1])
		}
		return len(s)
	}
	return 0
}

// str returns the length of the string literal s starts with, or 0. A
// string ends at its closing quote (backslash escapes honoured) or, for
// one-line quotes, at the end of the line.
func (l lang) str(s string) int {
	if s == "" {
		return 0
	}
	q := s[0]
	if l.raw && q == '`' {
		if n := strings.IndexByte(s[1:], '`'); n >= 0 {
			return n + 2
		}
		return len(s)
	}
	if !strings.ContainsRune(l.quotes, rune(q)) {
		return 0
	}
	if l.triple && len(s) >= 3 && s[1] == q && s[2] == q {
		if n := strings.Index(s[3:], s[:3]); n >= 0 {
			return n + 6
		}
		return len(s)
	}
	for i := 1; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case q:
			return i + 1
		case '\n':
			return i
		}
	}
	return len(s)
}

func isIdentStart(r rune) bool { return r == '_' || unicode.IsLetter(r) }

func identLen(s string) int {
	for i, r := range s {
		if r != '_' && !unicode.IsLetter(r) && !unicode.IsDigit(r) {
			return i
		}
	}
	return len(s)
}

// highlightCSS colours the classes highlight writes: GitHub-like colours,
// light by default, dark by the system's setting unless the page forces
// light, or forced by the theme switch.
const highlightCSS = `pre.hl .c { color: #6a737d; font-style: italic }
pre.hl .s { color: #032f62 }
pre.hl .n { color: #005cc5 }
pre.hl .k { color: #d73a49; font-weight: 600 }
@media (prefers-color-scheme: dark) {
  :root:not([data-theme=light]) pre.hl .c { color: #8b949e }
  :root:not([data-theme=light]) pre.hl .s { color: #a5d6ff }
  :root:not([data-theme=light]) pre.hl .n { color: #79c0ff }
  :root:not([data-theme=light]) pre.hl .k { color: #ff7b72 }
}
:root[data-theme=dark] pre.hl .c { color: #8b949e }
:root[data-theme=dark] pre.hl .s { color: #a5d6ff }
:root[data-theme=dark] pre.hl .n { color: #79c0ff }
:root[data-theme=dark] pre.hl .k { color: #ff7b72 }
`
