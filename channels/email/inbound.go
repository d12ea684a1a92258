package email

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/emersion/go-message"
	"github.com/emersion/go-message/mail"
	"github.com/emersion/go-message/textproto"

	"github.com/nanobot-go/nanobot/gateway/bus"
)

// header is what the adapter reads from a mail's header before deciding to
// fetch the rest.
type header struct {
	h         mail.Header
	from      string // the sender's address, lowercased
	fromName  string
	subject   string
	messageID string   // without angle brackets
	refs      []string // the thread so far: References, then In-Reply-To
}

// parseHeader reads a fetched header block. A mail without a usable From
// address is an error: there is nobody to answer.
func parseHeader(raw []byte) (header, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return header{}, errors.New("empty header")
	}
	if !bytes.HasSuffix(raw, []byte("\r\n\r\n")) && !bytes.HasSuffix(raw, []byte("\n\n")) {
		raw = append(append([]byte(nil), raw...), "\r\n\r\n"...)
	}
	th, err := textproto.ReadHeader(bufio.NewReader(bytes.NewReader(raw)))
	if err != nil {
		return header{}, fmt.Errorf("header: %w", err)
	}
	h := mail.Header{Header: message.Header{Header: th}}
	from, err := h.AddressList("From")
	if err != nil || len(from) == 0 || from[0].Address == "" {
		return header{}, fmt.Errorf("no sender address (From: %.80q)", h.Get("From"))
	}
	out := header{h: h, from: strings.ToLower(from[0].Address), fromName: from[0].Name}
	if out.subject, err = h.Subject(); err != nil {
		out.subject = h.Get("Subject")
	}
	out.subject = strings.Join(strings.Fields(out.subject), " ")
	if out.messageID, err = h.MessageID(); err != nil || out.messageID == "" {
		out.messageID = strings.Trim(strings.TrimSpace(h.Get("Message-Id")), "<>")
	}
	out.refs, _ = h.MsgIDList("References")
	irt, _ := h.MsgIDList("In-Reply-To")
	for _, id := range irt {
		if !contains(out.refs, id) {
			out.refs = append(out.refs, id)
		}
	}
	return out, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// screen decides from the header whether the agent sees a mail. It
// returns skip and, for a log line, why.
func (c *Channel) screen(h header) (skip bool, why string) {
	if c.self[h.from] {
		return true, "sent by the bot's own address"
	}
	if !c.allowed(h.from) {
		return true, "sender not on allowFrom"
	}
	if v := strings.ToLower(strings.TrimSpace(h.h.Get("Auto-Submitted"))); v != "" && v != "no" {
		return true, "automatic mail (Auto-Submitted: " + v + ")"
	}
	switch v := strings.ToLower(strings.TrimSpace(h.h.Get("Precedence"))); v {
	case "bulk", "junk", "list", "auto_reply":
		return true, "bulk or list mail (Precedence: " + v + ")"
	}
	for _, k := range []string{"X-Autoreply", "X-Autorespond", "List-Id"} {
		if h.h.Has(k) {
			return true, "automatic or list mail (" + k + ")"
		}
	}
	if rp := strings.TrimSpace(h.h.Get("Return-Path")); rp == "<>" {
		return true, "bounce (empty Return-Path)"
	}
	if local, _, _ := strings.Cut(h.from, "@"); local == "mailer-daemon" || local == "postmaster" {
		return true, "bounce (" + h.from + ")"
	}
	if c.cfg.VerifyDKIM || c.cfg.VerifySPF {
		res := parseAuthResults(h.h.Get("Authentication-Results"))
		_, domain, _ := strings.Cut(h.from, "@")
		if c.cfg.VerifyDKIM && !res.passAligned("dkim", domain) {
			return true, "DKIM did not pass for the sender's domain (forged sender?); set verifyDkim false if the server adds no Authentication-Results"
		}
		if c.cfg.VerifySPF && !res.passAligned("spf", domain) {
			return true, "SPF did not pass for the sender's domain (forged sender?); set verifySpf false if the server adds no Authentication-Results"
		}
	}
	return false, ""
}

// toInbound reads a mail into a message for the agent: the plain text
// (converted from HTML when there is none), without the quoted previous
// mail, capped at maxBodyChars, after a "Subject:" line; attachments saved
// when allowed, noted otherwise. raw is nil for a mail too big to fetch.
func (c *Channel) toInbound(h header, raw []byte, size int64, key string) (bus.Inbound, error) {
	var body string
	var media []bus.Media
	var notes []string
	if raw == nil {
		notes = append(notes, fmt.Sprintf("[This mail is %d MB, too large to read.]", size>>20))
	} else {
		var err error
		body, media, notes, err = c.readBody(raw, key)
		if err != nil {
			return bus.Inbound{}, err
		}
	}
	body = truncate(stripQuoted(cleanText(body)), c.cfg.MaxBodyChars)
	content := body
	switch {
	case strings.HasPrefix(strings.TrimSpace(body), "/"):
		content = strings.TrimSpace(body) // a command ("/new") stays one
	case body == "" && strings.HasPrefix(h.subject, "/"):
		content = h.subject
	case h.subject != "":
		content = strings.TrimSpace("Subject: " + h.subject + "\n\n" + body)
	}
	if len(notes) > 0 {
		content = strings.TrimSpace(content + "\n\n" + strings.Join(notes, "\n"))
	}
	if content == "" && len(media) == 0 {
		return bus.Inbound{}, errors.New("no text, subject or attachment")
	}
	id := h.messageID
	if id == "" {
		id = "uid:" + key
	}
	meta := map[string]any{"message_id": id, "subject": h.subject, "imap_uid": key}
	if h.fromName != "" {
		meta["from_name"] = h.fromName
	}
	if len(h.refs) > 0 {
		meta["references"] = strings.Join(h.refs, " ")
	}
	return bus.Inbound{
		Channel:    c.Name(),
		SenderID:   h.from,
		ChatID:     h.from,
		Content:    content,
		Media:      media,
		MessageID:  id,
		Metadata:   meta,
		ReceivedAt: time.Now(),
	}, nil
}

// readBody walks the MIME parts: text/plain parts make the body, text/html
// parts only when there is no plain text, everything else is an
// attachment.
func (c *Channel) readBody(raw []byte, key string) (body string, media []bus.Media, notes []string, err error) {
	r, err := mail.CreateReader(bytes.NewReader(raw))
	if err != nil && !message.IsUnknownCharset(err) {
		return "", nil, nil, fmt.Errorf("mime: %w", err)
	}
	defer r.Close()
	var plain, html []string
	for n := 0; ; n++ {
		p, err := r.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil && !message.IsUnknownCharset(err) {
			if len(plain)+len(html)+len(media) == 0 {
				return "", nil, nil, fmt.Errorf("mime part %d: %w", n, err)
			}
			notes = append(notes, "[The rest of this mail could not be read.]")
			break
		}
		var ct, name string
		switch ph := p.Header.(type) {
		case *mail.InlineHeader:
			ct, _, _ = ph.ContentType()
			if ct == "" || ct == "text/plain" || ct == "text/html" {
				b, err := io.ReadAll(io.LimitReader(p.Body, maxFetchBytes))
				if err != nil {
					notes = append(notes, "[A part of this mail could not be decoded.]")
					continue
				}
				if ct == "text/html" {
					html = append(html, string(b))
				} else {
					plain = append(plain, string(b))
				}
				continue
			}
			ah := mail.AttachmentHeader{Header: ph.Header}
			name, _ = ah.Filename()
		case *mail.AttachmentHeader:
			ct, _, _ = ph.ContentType()
			name, _ = ph.Filename()
		}
		m, note := c.attachment(p.Body, name, ct, len(media), key, n)
		if note != "" {
			notes = append(notes, note)
		} else {
			media = append(media, m)
		}
	}
	if len(plain) > 0 {
		return strings.Join(plain, "\n\n"), media, notes, nil
	}
	var texts []string
	for _, h := range html {
		texts = append(texts, htmlToText(h))
	}
	return strings.Join(texts, "\n\n"), media, notes, nil
}

// attachment saves one attachment into the media folder when attachments
// are on and it passes the type, count and size caps; otherwise it
// returns a note telling the agent what was left out.
func (c *Channel) attachment(r io.Reader, name, ct string, saved int, key string, part int) (bus.Media, string) {
	if ct == "" {
		ct = "application/octet-stream"
	}
	label := name
	if label == "" {
		label = "unnamed"
	}
	label = fmt.Sprintf("%s (%s)", label, ct)
	switch {
	case len(c.cfg.AllowedAttachmentTypes) == 0:
		return bus.Media{}, "[attachment " + label + ": not read, attachments are off]"
	case !c.typeAllowed(ct):
		return bus.Media{}, "[attachment " + label + ": not read, type not allowed]"
	case saved >= c.cfg.MaxAttachmentsPerEmail:
		return bus.Media{}, "[attachment " + label + ": not read, too many attachments]"
	case c.mediaDir == "":
		return bus.Media{}, "[attachment " + label + ": not read, no media folder]"
	}
	limit := c.cfg.MaxAttachmentSize
	data, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return bus.Media{}, "[attachment " + label + ": could not be decoded]"
	}
	if int64(len(data)) > limit {
		return bus.Media{}, fmt.Sprintf("[attachment %s: not read, larger than %d bytes]", label, limit)
	}
	if err := os.MkdirAll(c.mediaDir, 0o700); err != nil {
		c.log.Error("email: media folder", "err", err)
		return bus.Media{}, "[attachment " + label + ": could not be saved]"
	}
	file := filepath.Join(c.mediaDir, fmt.Sprintf("email_%s_%d_%s", strings.ReplaceAll(key, "/", "_"), part, safeName(name)))
	if err := os.WriteFile(file, data, 0o600); err != nil {
		c.log.Error("email: saving an attachment failed", "err", err)
		return bus.Media{}, "[attachment " + label + ": could not be saved]"
	}
	return bus.Media{Path: file, MIMEType: ct, Name: name, Size: int64(len(data))}, ""
}

// typeAllowed matches a MIME type against allowedAttachmentTypes.
func (c *Channel) typeAllowed(ct string) bool {
	ct = strings.ToLower(ct)
	for _, p := range c.cfg.AllowedAttachmentTypes {
		p = strings.ToLower(strings.TrimSpace(p))
		if p == "*" || p == ct {
			return true
		}
		if ok, _ := path.Match(p, ct); ok {
			return true
		}
	}
	return false
}

// safeName keeps a file name's letters, digits, dots, dashes and
// underscores.
func safeName(name string) string {
	name = filepath.Base(strings.ReplaceAll(name, `\`, "/"))
	var b strings.Builder
	for _, r := range name {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '-', r == '_':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	s := strings.TrimLeft(b.String(), ".")
	if len(s) > 80 {
		s = s[len(s)-80:]
	}
	if s == "" {
		return "attachment"
	}
	return s
}

// thread is what an answer to a correspondent needs to stay in the thread
// of the last mail they sent.
type thread struct {
	subject   string
	messageID string
	refs      []string
}

// remember keeps the thread of a delivered mail for answers sent without
// its metadata (the agent's own messages, a restart of the dispatcher).
func (c *Channel) remember(m bus.Inbound) {
	t := thread{subject: metaString(m.Metadata, "subject"), messageID: m.MessageID, refs: strings.Fields(metaString(m.Metadata, "references"))}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.threads) >= 10_000 {
		clear(c.threads)
	}
	c.threads[m.ChatID] = t
}

func metaString(meta map[string]any, key string) string {
	s, _ := meta[key].(string)
	return s
}
