// Outbound: replies sent over SMTP.

package email

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net"
	"net/http"
	"net/mail"
	"net/textproto"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"

	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/channels"
	"github.com/nanobot-go/nanobot/channels/media"
)

// Send implements channels.Channel: one mail to the chat's address, in the
// thread of the mail it answers (metadata from the inbound mail).
func (c *Channel) Send(ctx context.Context, m bus.Outbound) (channels.MessageRef, error) {
	if strings.TrimSpace(m.Content) == "" {
		return channels.MessageRef{}, channels.Permanentf("email: empty message")
	}
	return c.sendOne(ctx, m, nil)
}

// MaxAttachBytes caps the files attached to one mail (base64 makes them a
// third larger; most servers refuse mail over 25 MB). Files beyond it are
// named in the text instead.
const MaxAttachBytes = 15 << 20

// SendMedia implements channels.MediaSender: one mail with the text and
// the files attached; media with only a URL are linked in the text.
func (c *Channel) SendMedia(ctx context.Context, m bus.Outbound) (channels.MessageRef, error) {
	text, files, err := media.Split(m)
	if err != nil {
		return channels.MessageRef{}, channels.Permanentf("email: send file: %w", err)
	}
	var atts []outFile
	var notes []string
	total := 0
	for _, md := range files {
		name := filepath.Base(md.Path)
		if md.Name != "" {
			name = md.Name
		}
		data, err := readCapped(md.Path, MaxAttachBytes-total)
		switch {
		case errors.Is(err, media.ErrTooLarge):
			notes = append(notes, fmt.Sprintf("[%s not attached: the attachments would exceed %s]", name, media.Size(MaxAttachBytes)))
			continue
		case err != nil:
			return channels.MessageRef{}, channels.Permanentf("email: attach %s: %w", name, err)
		}
		total += len(data)
		typ := md.MIMEType
		if typ == "" {
			typ = http.DetectContentType(data)
		}
		atts = append(atts, outFile{name: name, mimeType: typ, data: data})
	}
	m.Content = strings.TrimSpace(strings.Join(append([]string{text}, notes...), "\n"))
	if m.Content == "" && len(atts) == 0 {
		return channels.MessageRef{}, channels.Permanentf("email: empty message")
	}
	return c.sendOne(ctx, m, atts)
}

func readCapped(path string, limit int) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return media.ReadCapped(f, int64(limit))
}

// outFile is one file of an outgoing mail.
type outFile struct {
	name, mimeType string
	data           []byte
}

func (c *Channel) sendOne(ctx context.Context, m bus.Outbound, atts []outFile) (channels.MessageRef, error) {
	to, err := mail.ParseAddress(m.ChatID)
	if err != nil {
		return channels.MessageRef{}, channels.Permanentf("email: %q is not an address", m.ChatID)
	}
	msg, id := c.compose(to.Address, m, atts)
	if err := c.sendMail(ctx, to.Address, msg); err != nil {
		return channels.MessageRef{}, err
	}
	return channels.MessageRef{ChatID: m.ChatID, MessageID: id}, nil
}

// compose writes the mail: a threaded reply when the metadata names the
// mail answered, plain text (Markdown reads well as it is), and with files
// a multipart/mixed mail whose first part is that text.
func (c *Channel) compose(to string, m bus.Outbound, atts []outFile) ([]byte, string) {
	meta := func(k string) string { return m.Metadata[k] }
	from := c.cfg.from()
	domain := "nanobot.local"
	if _, d, ok := strings.Cut(from, "@"); ok {
		domain = d
	}
	var rnd [12]byte
	_, _ = rand.Read(rnd[:])
	id := hex.EncodeToString(rnd[:]) + "@" + domain
	subject := "Message from your assistant"
	if s := meta("subject"); s != "" {
		subject = replySubject(s)
	}
	var b bytes.Buffer
	h := func(k, v string) { fmt.Fprintf(&b, "%s: %s\r\n", k, v) }
	h("From", (&mail.Address{Address: from}).String())
	h("To", (&mail.Address{Address: to}).String())
	h("Subject", encodeHeader(subject))
	h("Date", time.Now().Format(time.RFC1123Z))
	h("Message-ID", "<"+id+">")
	if orig := meta("message_id"); orig != "" {
		h("In-Reply-To", "<"+orig+">")
	}
	if refs := strings.Fields(meta("references")); len(refs) > 0 {
		for i := range refs {
			refs[i] = "<" + strings.Trim(refs[i], "<>") + ">"
		}
		h("References", strings.Join(refs, " "))
	}
	h("Auto-Submitted", "auto-replied") // other robots: do not answer this
	h("MIME-Version", "1.0")
	body := strings.ReplaceAll(strings.ReplaceAll(m.Content, "\r\n", "\n"), "\n", "\r\n") + "\r\n"
	if len(atts) == 0 {
		h("Content-Type", "text/plain; charset=utf-8")
		h("Content-Transfer-Encoding", "8bit")
		b.WriteString("\r\n")
		b.WriteString(body)
		return b.Bytes(), id
	}
	mw := multipart.NewWriter(&b)
	h("Content-Type", mime.FormatMediaType("multipart/mixed", map[string]string{"boundary": mw.Boundary()}))
	b.WriteString("\r\n")
	text, _ := mw.CreatePart(textproto.MIMEHeader{"Content-Type": {"text/plain; charset=utf-8"}, "Content-Transfer-Encoding": {"8bit"}})
	_, _ = io.WriteString(text, body)
	for _, a := range atts {
		disp := mime.FormatMediaType("attachment", map[string]string{"filename": a.name})
		part, _ := mw.CreatePart(textproto.MIMEHeader{
			"Content-Type":              {a.mimeType},
			"Content-Disposition":       {disp},
			"Content-Transfer-Encoding": {"base64"},
		})
		writeBase64Lines(part, a.data)
	}
	_ = mw.Close()
	return b.Bytes(), id
}

// writeBase64Lines writes data base64-encoded in lines of 76 characters
// (RFC 2045).
func writeBase64Lines(w io.Writer, data []byte) {
	enc := base64.StdEncoding.EncodeToString(data)
	for len(enc) > 76 {
		_, _ = io.WriteString(w, enc[:76]+"\r\n")
		enc = enc[76:]
	}
	_, _ = io.WriteString(w, enc+"\r\n")
}

// sendMail delivers over SMTP: implicit TLS or STARTTLS; AUTH only over
// TLS unless allowInsecure.
func (c *Channel) sendMail(ctx context.Context, to string, msg []byte) error {
	addr := net.JoinHostPort(c.cfg.SMTPHost, strconv.Itoa(c.cfg.SMTPPort))
	tlsCfg := &tls.Config{ServerName: c.cfg.SMTPHost, RootCAs: c.roots}
	var cli *smtp.Client
	var err error
	switch {
	case c.cfg.SMTPUseSSL:
		cli, err = smtp.DialTLS(addr, tlsCfg)
	case c.cfg.SMTPUseTLS:
		cli, err = smtp.DialStartTLS(addr, tlsCfg)
	default:
		cli, err = smtp.Dial(addr)
	}
	if err != nil {
		return fmt.Errorf("email: SMTP %s: %s", addr, c.redact.Error(err))
	}
	defer cli.Close()
	if dl, ok := ctx.Deadline(); ok {
		cli.CommandTimeout, cli.SubmissionTimeout = time.Until(dl), time.Until(dl)
	}
	if c.cfg.SMTPUsername != "" {
		if _, isTLS := cli.TLSConnectionState(); !isTLS && !c.cfg.AllowInsecure {
			return channels.Permanentf("email: refusing to send the SMTP password over an unencrypted connection")
		}
		if err := cli.Auth(sasl.NewPlainClient("", c.cfg.SMTPUsername, c.cfg.SMTPPassword)); err != nil {
			return channels.Permanentf("email: SMTP login refused: %s", c.redact.Error(err))
		}
	}
	if err := cli.SendMail(c.cfg.from(), []string{to}, bytes.NewReader(msg)); err != nil {
		var se *smtp.SMTPError
		if errors.As(err, &se) && se.Code >= 500 {
			return channels.Permanentf("email: SMTP refused the mail: %s", c.redact.Error(err))
		}
		return fmt.Errorf("email: SMTP: %s", c.redact.Error(err))
	}
	return cli.Quit()
}
