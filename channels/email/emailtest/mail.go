package emailtest

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/emersion/go-message/mail"
)

// Mail is a message a test user writes. Bytes renders it as RFC 5322.
type Mail struct {
	From, To string
	// FromName is the display name ("Alice").
	FromName string
	Subject  string
	// Text and HTML are the bodies; with both the mail is
	// multipart/alternative, with only HTML it is text/html.
	Text, HTML string
	// MessageID is generated when empty (without angle brackets).
	MessageID string
	// InReplyTo and References thread the mail (ids without brackets).
	InReplyTo  string
	References []string
	// Headers are extra header fields ("Auto-Submitted": "auto-replied").
	Headers map[string]string
	// Attachments are files.
	Attachments []Attachment
}

// Attachment is a file in a Mail.
type Attachment struct {
	Name, ContentType string
	Data              []byte
}

// Bytes renders the mail and returns it with its Message-ID.
func (m Mail) Bytes() ([]byte, string, error) {
	var h mail.Header
	h.SetDate(time.Now())
	h.SetAddressList("From", []*mail.Address{{Name: m.FromName, Address: m.From}})
	h.SetAddressList("To", []*mail.Address{{Address: m.To}})
	h.SetSubject(m.Subject)
	id := m.MessageID
	if id == "" {
		if err := h.GenerateMessageIDWithHostname(domainOf(m.From)); err != nil {
			return nil, "", err
		}
		id, _ = h.MessageID()
	} else {
		h.SetMessageID(id)
	}
	if m.InReplyTo != "" {
		h.SetMsgIDList("In-Reply-To", []string{m.InReplyTo})
	}
	if len(m.References) > 0 {
		h.SetMsgIDList("References", m.References)
	}
	for k, v := range m.Headers {
		h.Set(k, v)
	}
	var buf bytes.Buffer
	if err := m.write(&buf, h); err != nil {
		return nil, "", fmt.Errorf("emailtest: render mail: %w", err)
	}
	return buf.Bytes(), id, nil
}

func (m Mail) write(w io.Writer, h mail.Header) error {
	if len(m.Attachments) == 0 && (m.Text == "" || m.HTML == "") {
		ct := "text/plain"
		body := m.Text
		if m.HTML != "" {
			ct, body = "text/html", m.HTML
		}
		h.SetContentType(ct, map[string]string{"charset": "utf-8"})
		wc, err := mail.CreateSingleInlineWriter(w, h)
		if err != nil {
			return err
		}
		if _, err := io.WriteString(wc, body); err != nil {
			return err
		}
		return wc.Close()
	}
	mw, err := mail.CreateWriter(w, h)
	if err != nil {
		return err
	}
	iw, err := mw.CreateInline()
	if err != nil {
		return err
	}
	for _, p := range []struct{ ct, body string }{{"text/plain", m.Text}, {"text/html", m.HTML}} {
		if p.body == "" {
			continue
		}
		var ih mail.InlineHeader
		ih.SetContentType(p.ct, map[string]string{"charset": "utf-8"})
		pw, err := iw.CreatePart(ih)
		if err != nil {
			return err
		}
		if _, err := io.WriteString(pw, p.body); err != nil {
			return err
		}
		if err := pw.Close(); err != nil {
			return err
		}
	}
	if err := iw.Close(); err != nil {
		return err
	}
	for _, a := range m.Attachments {
		var ah mail.AttachmentHeader
		ah.SetContentType(a.ContentType, nil)
		ah.SetFilename(a.Name)
		aw, err := mw.CreateAttachment(ah)
		if err != nil {
			return err
		}
		if _, err := aw.Write(a.Data); err != nil {
			return err
		}
		if err := aw.Close(); err != nil {
			return err
		}
	}
	return mw.Close()
}

func domainOf(addr string) string {
	if i := strings.LastIndexByte(addr, '@'); i >= 0 && i < len(addr)-1 {
		return addr[i+1:]
	}
	return "example.test"
}

// Parsed is a received message taken apart for assertions.
type Parsed struct {
	Header mail.Header
	// Text and HTML are the decoded inline bodies, lines ending in "\n".
	Text, HTML string
	// Attachments are the files.
	Attachments []Attachment
}

// Parse takes a raw message apart.
func Parse(raw []byte) (Parsed, error) {
	r, err := mail.CreateReader(bytes.NewReader(raw))
	if err != nil {
		return Parsed{}, err
	}
	defer r.Close()
	p := Parsed{Header: r.Header}
	for {
		part, err := r.NextPart()
		if err == io.EOF {
			return p, nil
		}
		if err != nil {
			return p, err
		}
		b, err := io.ReadAll(part.Body)
		if err != nil {
			return p, err
		}
		switch h := part.Header.(type) {
		case *mail.InlineHeader:
			ct, _, _ := h.ContentType()
			text := strings.ReplaceAll(string(b), "\r\n", "\n")
			if ct == "text/html" {
				p.HTML += text
			} else {
				p.Text += text
			}
		case *mail.AttachmentHeader:
			name, _ := h.Filename()
			ct, _, _ := h.ContentType()
			p.Attachments = append(p.Attachments, Attachment{Name: name, ContentType: ct, Data: b})
		}
	}
}
