package email

import (
	"strings"
	"testing"
)

func TestHTMLToText(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"paragraphs and entities", "<p>Hello &amp; welcome</p><p>Second&nbsp;line</p>", "Hello & welcome\n\nSecond line"},
		{"br and spaces", "one<br>two   three\n four", "one\ntwo three four"},
		{"lists", "<ul><li>a</li><li>b</li></ul>", "- a\n- b"},
		{"links", `see <a href="https://x.test/p">the page</a>`, "see the page (https://x.test/p)"},
		{"bare link", `<a href="https://x.test/">https://x.test/</a>`, "https://x.test/"},
		{"no javascript links", `<a href="javascript:alert(1)">click</a>`, "click"},
		{"drops head, style, script", "<html><head><title>T</title><style>p{}</style></head><body>text<script>evil()</script></body></html>", "text"},
		{"pre keeps layout", "<pre>a  b\n  c</pre>", "a  b\n  c"},
		{"image alt", `<img src="x.png" alt="logo"> hi`, "[image: logo] hi"},
		{"broken markup", "<p>unclosed <b>bold <i>and", "unclosed bold and"},
		{"table", "<table><tr><td>a</td><td>b</td></tr><tr><td>c</td><td>d</td></tr></table>", "a b\nc d"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := htmlToText(tt.in); got != tt.want {
				t.Errorf("htmlToText(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestStripQuoted(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"attribution and quote", "Sure.\n\nOn Tue, 2 Jan 2024 at 10:00, Bot <b@x> wrote:\n> old\n> text", "Sure."},
		{"wrapped attribution", "Yes\n\nOn Tue, 2 Jan 2024 at 10:00, Bot <b@x.test>\nwrote:\n> old", "Yes"},
		{"german", "Ja\n\nAm 2. Jan. 2024 schrieb Bot:\n> alt", "Ja"},
		{"outlook", "Fine\n\n-----Original Message-----\nFrom: bot\nold", "Fine"},
		{"inline quotes stay", "> question one\nanswer one\n> question two\nanswer two", "> question one\nanswer one\n> question two\nanswer two"},
		{"all quote stays", "> only a quote", "> only a quote"},
		{"no quote", "plain text", "plain text"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := stripQuoted(tt.in); got != tt.want {
				t.Errorf("stripQuoted(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestTruncate(t *testing.T) {
	if got := truncate("short", 10); got != "short" {
		t.Errorf("truncate short = %q", got)
	}
	got := truncate("äöü"+strings.Repeat("x", 20), 5)
	if !strings.HasPrefix(got, "äöüxx\n\n[… the mail goes on: 5 of its 23 characters shown]") {
		t.Errorf("truncate = %q", got)
	}
	if got := truncate("abc", 0); got != "abc" {
		t.Errorf("truncate with no cap = %q", got)
	}
}

func TestReplySubject(t *testing.T) {
	tests := []struct{ subject, prefix, want string }{
		{"Question", "Re: ", "Re: Question"},
		{"Re: Question", "Re: ", "Re: Question"},
		{"RE: Question", "Re: ", "RE: Question"},
		{"AW: Frage", "Re: ", "AW: Frage"},
		{"", "Re: ", "Re: your mail"},
		{"Topic", "[bot] ", "[bot] Topic"},
		{"[bot] Topic", "[bot] ", "[bot] Topic"},
	}
	for _, tt := range tests {
		if got := replySubject(tt.subject, tt.prefix); got != tt.want {
			t.Errorf("replySubject(%q, %q) = %q, want %q", tt.subject, tt.prefix, got, tt.want)
		}
	}
}

func TestToPlain(t *testing.T) {
	in := "# Title\n\nSome **bold** and ~~old~~ text, a [link](https://x.test) and `**code**`.\n\n```go\nfmt.Println(\"**not bold**\")\n```\n- item"
	want := "Title\n\nSome bold and old text, a link <https://x.test> and `**code**`.\n\n```go\nfmt.Println(\"**not bold**\")\n```\n- item"
	if got := toPlain(in); got != want {
		t.Errorf("toPlain =\n%s\nwant\n%s", got, want)
	}
}

func TestToHTML(t *testing.T) {
	got := toHTML("## Plan\n\nDo **this** & *that* <now>.\n\n- one\n- two\n\n1. first\n\n> quoted\n\n```sh\necho '<b>'\n```\n\n[ok](https://x.test/?a=1&b=2) [bad](javascript:alert(1)) `a<b`")
	for _, want := range []string{
		"<h2>Plan</h2>",
		"<p>Do <strong>this</strong> &amp; <em>that</em> &lt;now&gt;.</p>",
		"<ul>\n<li>one</li>\n<li>two</li>\n</ul>",
		"<ol>\n<li>first</li>\n</ol>",
		"<blockquote>quoted</blockquote>",
		`<pre><code class="language-sh">echo &#39;&lt;b&gt;&#39;</code></pre>`,
		`<a href="https://x.test/?a=1&amp;b=2">ok</a>`,
		"<code>a&lt;b</code>",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("toHTML lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "javascript:") && strings.Contains(got, `href="javascript`) {
		t.Errorf("a javascript: link became a link:\n%s", got)
	}
}

func TestAuthResults(t *testing.T) {
	tests := []struct {
		name, header, domain string
		dkim, spf            bool
	}{
		{"gmail style", "mx.google.com; dkim=pass header.i=@example.test header.s=s1 header.b=abc; spf=pass (google.com: domain of a@example.test designates 1.2.3.4 as permitted sender) smtp.mailfrom=a@example.test; dmarc=pass header.from=example.test", "example.test", true, true},
		{"other domain", "mx.test; dkim=pass header.d=evil.test; spf=pass smtp.mailfrom=x@evil.test", "example.test", false, false},
		{"subdomain bounce", "mx.test; spf=pass smtp.mailfrom=bounce@mail.example.test; dkim=pass header.d=example.test", "example.test", true, true},
		{"failures", "mx.test; dkim=fail header.d=example.test; spf=softfail smtp.mailfrom=example.test", "example.test", false, false},
		{"tld is not a parent", "mx.test; dkim=pass header.d=test", "example.test", false, false},
		{"no results", "mx.test; none", "example.test", false, false},
		{"absent", "", "example.test", false, false},
		{"second dkim passes", "mx.test; dkim=neutral header.d=example.test; dkim=pass header.d=example.test", "example.test", true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := parseAuthResults(tt.header)
			if got := r.passAligned("dkim", tt.domain); got != tt.dkim {
				t.Errorf("dkim = %v, want %v", got, tt.dkim)
			}
			if got := r.passAligned("spf", tt.domain); got != tt.spf {
				t.Errorf("spf = %v, want %v", got, tt.spf)
			}
		})
	}
}

func TestParseHeaderRejectsNoSender(t *testing.T) {
	for _, raw := range []string{"", "Subject: x\r\n\r\n", "From: nobody\r\n\r\n", "From: <>\r\n\r\n"} {
		if _, err := parseHeader([]byte(raw)); err == nil {
			t.Errorf("parseHeader(%q): nil error, want one", raw)
		}
	}
	h, err := parseHeader([]byte("From: =?utf-8?q?J=C3=BCrgen?= <Juergen@Example.TEST>\r\nSubject: =?utf-8?q?Gr=C3=BC=C3=9Fe?=\r\nMessage-ID: <a@b>\r\nIn-Reply-To: <r2@b>\r\nReferences: <r1@b> <r2@b>\r\n\r\n"))
	if err != nil {
		t.Fatal(err)
	}
	if h.from != "juergen@example.test" || h.fromName != "Jürgen" || h.subject != "Grüße" || h.messageID != "a@b" || strings.Join(h.refs, " ") != "r1@b r2@b" {
		t.Errorf("parseHeader = %+v", h)
	}
}
