package email

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/mail"
	"regexp"
	"strings"
	"sync"

	"github.com/emersion/go-message"
	_ "github.com/emersion/go-message/charset" // decode common charsets
	gomail "github.com/emersion/go-message/mail"
	"golang.org/x/net/html"
)

// parsed is what the adapter uses of one mail.
type parsed struct {
	From       string // bare address, lower case
	Subject    string
	MessageID  string   // without <>
	InReplyTo  string   // without <>
	References []string // without <>
	Text       string
	Automatic  bool // an auto-reply, list or bulk mail: never answered
	Files      []attachment
}

type attachment struct {
	Name, MIMEType string
	Data           []byte
	TooBig         bool
}

// parse reads a mail; attachments are kept when keep is true, each at most
// maxBytes, at most maxCount of them.
func parse(raw []byte, keep bool, maxBytes int64, maxCount int) (parsed, error) {
	r, err := gomail.CreateReader(bytes.NewReader(raw))
	if err != nil && !message.IsUnknownCharset(err) && !message.IsUnknownEncoding(err) {
		return parsed{}, fmt.Errorf("email: unreadable message: %w", err)
	}
	h := r.Header
	var p parsed
	if from, err := h.AddressList("From"); err == nil && len(from) > 0 {
		p.From = strings.ToLower(from[0].Address)
	} else if a, err := mail.ParseAddress(h.Get("From")); err == nil {
		p.From = strings.ToLower(a.Address)
	}
	if p.From == "" {
		return parsed{}, errors.New("email: message without a sender")
	}
	p.Subject, _ = h.Subject()
	p.MessageID, _ = h.MessageID()
	if ids, err := h.MsgIDList("In-Reply-To"); err == nil && len(ids) > 0 {
		p.InReplyTo = ids[0]
	}
	p.References, _ = h.MsgIDList("References")
	auto := strings.ToLower(h.Get("Auto-Submitted"))
	prec := strings.ToLower(h.Get("Precedence"))
	p.Automatic = (auto != "" && auto != "no") || prec == "bulk" || prec == "list" || prec == "junk" ||
		h.Get("List-Id") != "" || h.Get("X-Autoreply") != "" || h.Get("X-Autorespond") != ""

	var plain, htmlText string
	for {
		part, err := r.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			if plain != "" || htmlText != "" {
				break // keep what was read
			}
			return parsed{}, fmt.Errorf("email: unreadable body: %w", err)
		}
		switch ph := part.Header.(type) {
		case *gomail.InlineHeader:
			ct, _, _ := ph.ContentType()
			body, _ := io.ReadAll(io.LimitReader(part.Body, 4<<20))
			switch ct {
			case "text/plain", "":
				if plain == "" {
					plain = string(body)
				}
			case "text/html":
				if htmlText == "" {
					htmlText = htmlToText(string(body))
				}
			}
		case *gomail.AttachmentHeader:
			if !keep || len(p.Files) >= maxCount {
				continue
			}
			name, _ := ph.Filename()
			ct, _, _ := ph.ContentType()
			data, _ := io.ReadAll(io.LimitReader(part.Body, maxBytes+1))
			a := attachment{Name: name, MIMEType: ct}
			if int64(len(data)) > maxBytes {
				a.TooBig = true
			} else {
				a.Data = data
			}
			p.Files = append(p.Files, a)
		}
	}
	p.Text = plain
	if strings.TrimSpace(p.Text) == "" {
		p.Text = htmlText
	}
	p.Text = stripQuoted(strings.ReplaceAll(p.Text, "\r\n", "\n"))
	return p, nil
}

// Compiled on first use: a process without this channel never builds it.
var quoteHeader = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?m)^On .{1,200} wrote:\s*$`) })

// stripQuoted drops the quoted history below a reply ("> ..." lines and
// the "On ... wrote:" line before them), which the session already has.
func stripQuoted(s string) string {
	if loc := quoteHeader().FindStringIndex(s); loc != nil {
		rest := strings.TrimSpace(s[loc[1]:])
		if rest == "" || strings.HasPrefix(rest, ">") {
			s = s[:loc[0]]
		}
	}
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), ">") {
			continue
		}
		out = append(out, strings.TrimRight(l, " \t"))
	}
	return strings.TrimSpace(strings.Join(out, "\n"))
}

// htmlToText extracts readable text from an HTML mail: block elements
// become line breaks, scripts and styles are dropped.
func htmlToText(s string) string {
	z := html.NewTokenizer(strings.NewReader(s))
	var b strings.Builder
	skip := 0
	for {
		switch z.Next() {
		case html.ErrorToken:
			return strings.TrimSpace(collapseBlank(b.String()))
		case html.TextToken:
			if skip == 0 {
				b.WriteString(strings.Join(strings.Fields(string(z.Text())), " "))
				b.WriteByte(' ')
			}
		case html.StartTagToken, html.SelfClosingTagToken, html.EndTagToken:
			name, _ := z.TagName()
			tag := string(name)
			switch tag {
			case "script", "style", "head":
				if t := z.Token(); t.Type == html.StartTagToken {
					skip++
				} else if t.Type == html.EndTagToken && skip > 0 {
					skip--
				}
			case "br", "p", "div", "li", "tr", "h1", "h2", "h3", "h4", "h5", "h6", "blockquote":
				b.WriteString("\n")
			}
		}
	}
}

// Compiled on first use: a process without this channel never builds it.
var blankLines = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\n[ \t]*\n(\s*\n)+`) })

func collapseBlank(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimSpace(l)
	}
	return blankLines().ReplaceAllString(strings.Join(lines, "\n"), "\n\n")
}

// replySubject is "Re: subject" without piling up prefixes.
func replySubject(s string) string {
	s = strings.TrimSpace(s)
	for {
		l := strings.ToLower(s)
		if strings.HasPrefix(l, "re:") {
			s = strings.TrimSpace(s[3:])
			continue
		}
		if strings.HasPrefix(l, "aw:") || strings.HasPrefix(l, "sv:") {
			s = strings.TrimSpace(s[3:])
			continue
		}
		break
	}
	if s == "" {
		s = "(no subject)"
	}
	return "Re: " + s
}

// encodeHeader keeps non-ASCII subjects readable.
func encodeHeader(s string) string { return mime.QEncoding.Encode("utf-8", s) }
