package email

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/emersion/go-message/mail"
	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"

	"github.com/nanobot-go/nanobot/channels"
	"github.com/nanobot-go/nanobot/gateway/bus"
)

// sendTimeout bounds one submission, connect to QUIT.
const sendTimeout = 2 * time.Minute

// Send implements channels.Channel: one mail (the dispatcher already split
// the text to MessageLimit) to the chat's address, threaded under the mail
// it answers. The address must be on allowFrom (or allowFrom "*"), so the
// agent cannot be made to mail strangers. With autoReplyEnabled false an
// answer is not mailed (metadata force_send overrides).
func (c *Channel) Send(ctx context.Context, m bus.Outbound) (channels.MessageRef, error) {
	return c.send(ctx, m, nil, nil)
}

// SendMedia implements channels.MediaSender: the text with the files
// attached (up to maxAttachmentsPerEmail of at most maxAttachmentSize
// bytes each; the others are named in the text instead).
func (c *Channel) SendMedia(ctx context.Context, m bus.Outbound) (channels.MessageRef, error) {
	files, notes := c.outFiles(m.Media)
	return c.send(ctx, m, files, notes)
}

// outFile is an attachment of an outgoing mail.
type outFile struct {
	name, contentType string
	data              []byte
}

func (c *Channel) send(ctx context.Context, m bus.Outbound, files []outFile, notes []string) (channels.MessageRef, error) {
	to, err := recipient(m.ChatID)
	if err != nil {
		return channels.MessageRef{}, &channels.PermanentError{Err: fmt.Errorf("email: send: %w", err)}
	}
	if !c.allowed(to) {
		return channels.MessageRef{}, &channels.PermanentError{Err: fmt.Errorf("email: send to %s: not on channels.email.allowFrom", to)}
	}
	text := m.Content
	if len(notes) > 0 {
		text = strings.TrimSpace(text + "\n\n" + strings.Join(notes, "\n"))
	}
	if strings.TrimSpace(text) == "" && len(files) == 0 {
		return channels.MessageRef{}, &channels.PermanentError{Err: fmt.Errorf("email: send to %s: empty message", to)}
	}
	t := c.threadFor(m)
	if t.messageID != "" && !c.cfg.AutoReplyEnabled && m.Metadata["force_send"] != true {
		c.log.Info("email: answer not mailed: autoReplyEnabled is false", "to", to)
		return channels.MessageRef{ChatID: m.ChatID}, nil
	}
	subject := strings.TrimSpace(t.subject)
	if t.messageID != "" {
		subject = replySubject(subject, c.cfg.SubjectPrefix)
	} else if subject == "" {
		subject = "Message from nanobot"
	}
	raw, id, err := c.compose(to, subject, t, text, files)
	if err != nil {
		return channels.MessageRef{}, &channels.PermanentError{Err: fmt.Errorf("email: compose mail to %s: %w", to, err)}
	}
	if err := c.submit(ctx, to, raw); err != nil {
		return channels.MessageRef{}, c.sendError(to, err)
	}
	return channels.MessageRef{ChatID: m.ChatID, MessageID: id}, nil
}

// recipient parses a chat id: one bare address.
func recipient(chatID string) (string, error) {
	a, err := mail.ParseAddress(strings.TrimSpace(chatID))
	if err != nil || a.Address == "" {
		return "", fmt.Errorf("chat id %q is not an address", chatID)
	}
	return strings.ToLower(a.Address), nil
}

// threadFor finds the mail an outgoing message answers: from the
// metadata the agent passed back, else the last mail from that chat.
func (c *Channel) threadFor(m bus.Outbound) thread {
	if id := metaString(m.Metadata, "message_id"); id != "" {
		t := thread{subject: metaString(m.Metadata, "subject"), messageID: id, refs: strings.Fields(metaString(m.Metadata, "references"))}
		if strings.HasPrefix(id, "uid:") { // the mail had no Message-ID
			t.messageID = ""
		}
		return t
	}
	c.mu.Lock()
	t, ok := c.threads[strings.ToLower(m.ChatID)]
	c.mu.Unlock()
	if !ok {
		return thread{subject: metaString(m.Metadata, "subject")}
	}
	if strings.HasPrefix(t.messageID, "uid:") {
		t.messageID = ""
	}
	return t
}

// maxReferences keeps the References header short on long threads: the
// root and the latest ids.
const maxReferences = 20

// compose renders one mail: plain text (plus an HTML alternative when
// htmlReplies is on), the files attached. It returns the bytes and the
// Message-ID (without angle brackets).
func (c *Channel) compose(to, subject string, t thread, text string, files []outFile) ([]byte, string, error) {
	var h mail.Header
	h.SetDate(time.Now())
	name := c.cfg.FromName
	if name == "" {
		name = "nanobot"
	}
	h.SetAddressList("From", []*mail.Address{{Name: name, Address: c.from}})
	h.SetAddressList("To", []*mail.Address{{Address: to}})
	h.SetSubject(subject)
	_, domain, _ := strings.Cut(c.from, "@")
	if err := h.GenerateMessageIDWithHostname(domain); err != nil {
		return nil, "", err
	}
	id, _ := h.MessageID()
	if t.messageID != "" {
		h.SetMsgIDList("In-Reply-To", []string{t.messageID})
		refs := append(append([]string(nil), t.refs...), t.messageID)
		if len(refs) > maxReferences {
			refs = append(refs[:1], refs[len(refs)-maxReferences+1:]...)
		}
		h.SetMsgIDList("References", refs)
		// RFC 3834: an automatic answer says so, and vacation responders
		// then do not answer it (no mail loops).
		h.Set("Auto-Submitted", "auto-replied")
	} else {
		h.Set("Auto-Submitted", "auto-generated")
	}
	h.Set("X-Auto-Response-Suppress", "All")

	plain := toPlain(text)
	var buf bytes.Buffer
	if len(files) == 0 && !c.cfg.HTMLReplies {
		h.SetContentType("text/plain", map[string]string{"charset": "utf-8"})
		w, err := mail.CreateSingleInlineWriter(&buf, h)
		if err != nil {
			return nil, "", err
		}
		if _, err := io.WriteString(w, plain); err != nil {
			return nil, "", err
		}
		if err := w.Close(); err != nil {
			return nil, "", err
		}
		return buf.Bytes(), id, nil
	}
	var iw *mail.InlineWriter
	var mw *mail.Writer
	var err error
	if len(files) == 0 {
		iw, err = mail.CreateInlineWriter(&buf, h)
	} else {
		if mw, err = mail.CreateWriter(&buf, h); err == nil {
			iw, err = mw.CreateInline()
		}
	}
	if err != nil {
		return nil, "", err
	}
	parts := []struct{ ct, body string }{{"text/plain", plain}}
	if c.cfg.HTMLReplies {
		parts = append(parts, struct{ ct, body string }{"text/html", toHTML(text)})
	}
	for _, p := range parts {
		var ph mail.InlineHeader
		ph.SetContentType(p.ct, map[string]string{"charset": "utf-8"})
		w, err := iw.CreatePart(ph)
		if err != nil {
			return nil, "", err
		}
		if _, err := io.WriteString(w, p.body); err != nil {
			return nil, "", err
		}
		if err := w.Close(); err != nil {
			return nil, "", err
		}
	}
	if err := iw.Close(); err != nil {
		return nil, "", err
	}
	for _, f := range files {
		var ah mail.AttachmentHeader
		ah.SetContentType(f.contentType, nil)
		ah.SetFilename(f.name)
		w, err := mw.CreateAttachment(ah)
		if err != nil {
			return nil, "", err
		}
		if _, err := w.Write(f.data); err != nil {
			return nil, "", err
		}
		if err := w.Close(); err != nil {
			return nil, "", err
		}
	}
	if mw != nil {
		if err := mw.Close(); err != nil {
			return nil, "", err
		}
	}
	return buf.Bytes(), id, nil
}

// outFiles reads the files to attach, within the caps; what does not fit
// or cannot be read becomes a note in the text.
func (c *Channel) outFiles(media []bus.Media) ([]outFile, []string) {
	var files []outFile
	var notes []string
	for _, m := range media {
		name := m.Name
		if name == "" && m.Path != "" {
			name = filepath.Base(m.Path)
		}
		switch {
		case m.Path == "" && m.URL != "":
			notes = append(notes, "["+cmpOr(name, "file")+": "+m.URL+"]")
			continue
		case m.Path == "":
			continue
		case len(files) >= c.cfg.MaxAttachmentsPerEmail:
			notes = append(notes, "["+name+": not attached, too many files]")
			continue
		}
		st, err := os.Stat(m.Path)
		if err != nil || !st.Mode().IsRegular() {
			notes = append(notes, "["+name+": not attached, file not found]")
			continue
		}
		if st.Size() > c.cfg.MaxAttachmentSize {
			notes = append(notes, fmt.Sprintf("[%s: not attached, larger than %d bytes]", name, c.cfg.MaxAttachmentSize))
			continue
		}
		data, err := os.ReadFile(m.Path)
		if err != nil {
			notes = append(notes, "["+name+": not attached, unreadable]")
			continue
		}
		ct := m.MIMEType
		if ct == "" {
			ct = mime.TypeByExtension(filepath.Ext(name))
		}
		if ct == "" {
			ct = "application/octet-stream"
		}
		files = append(files, outFile{name: name, contentType: ct, data: data})
	}
	return files, notes
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// errCleartextAuth is returned instead of sending a password over a
// connection without TLS.
var errCleartextAuth = errors.New("refusing to send the SMTP password over a connection without TLS (set smtpUseTls or smtpUseSsl)")

// submit delivers raw to the SMTP server for to: implicit TLS
// (smtpUseSsl), STARTTLS (smtpUseTls, required once asked for), or no TLS
// with allowInsecure; AUTH only over TLS unless allowInsecure.
func (c *Channel) submit(ctx context.Context, to string, raw []byte) error {
	ctx, cancel := context.WithTimeout(ctx, sendTimeout)
	defer cancel()
	host := c.cfg.SMTPHost
	addr := net.JoinHostPort(host, strconv.Itoa(c.cfg.SMTPPort))
	conn, err := (&net.Dialer{Timeout: c.dialTimeout}).DialContext(ctx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("dial %s: %w", addr, err)
	}
	stop := context.AfterFunc(ctx, func() { _ = conn.Close() })
	defer stop()
	var cl *smtp.Client
	switch {
	case c.cfg.SMTPUseSSL:
		tc := tls.Client(conn, c.tlsFor(host))
		if err := tc.HandshakeContext(ctx); err != nil {
			conn.Close()
			return fmt.Errorf("tls with %s: %w", addr, err)
		}
		cl = smtp.NewClient(tc)
	case c.cfg.SMTPUseTLS:
		if cl, err = smtp.NewClientStartTLS(conn, c.tlsFor(host)); err != nil {
			return fmt.Errorf("starttls with %s: %w", addr, err)
		}
	default:
		cl = smtp.NewClient(conn)
	}
	defer cl.Close()
	cl.CommandTimeout, cl.SubmissionTimeout = time.Minute, sendTimeout
	if c.cfg.SMTPUsername != "" {
		if _, secure := cl.TLSConnectionState(); !secure && !c.cfg.AllowInsecure {
			return &channels.PermanentError{Err: errCleartextAuth}
		}
		var a sasl.Client
		switch {
		case cl.SupportsAuth(sasl.Plain):
			a = sasl.NewPlainClient("", c.cfg.SMTPUsername, c.cfg.SMTPPassword)
		case cl.SupportsAuth(sasl.Login):
			a = sasl.NewLoginClient(c.cfg.SMTPUsername, c.cfg.SMTPPassword)
		default:
			return &channels.PermanentError{Err: fmt.Errorf("%s offers neither AUTH PLAIN nor LOGIN", addr)}
		}
		if err := cl.Auth(a); err != nil {
			return fmt.Errorf("auth as %s: %w", c.cfg.SMTPUsername, err)
		}
	}
	if err := cl.SendMail(c.from, []string{to}, bytes.NewReader(raw)); err != nil {
		return err
	}
	_ = cl.Quit()
	return nil
}

// sendError classifies a submission error for the dispatcher: SMTP 5xx
// replies (rejected recipient, failed login) are permanent, 4xx and
// network errors are retried.
func (c *Channel) sendError(to string, err error) error {
	var pe *channels.PermanentError
	if errors.As(err, &pe) {
		return &channels.PermanentError{Err: fmt.Errorf("email: send to %s: %w", to, pe.Err)} // our own text: no secrets
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("email: send to %s: %w", to, err)
	}
	wrapped := fmt.Errorf("email: send to %s: %s", to, c.redact(err.Error()))
	var se *smtp.SMTPError
	if errors.As(err, &se) && se.Code >= 500 {
		return &channels.PermanentError{Err: wrapped}
	}
	return wrapped
}
