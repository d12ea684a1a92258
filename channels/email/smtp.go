package email

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/mail"
	"strconv"
	"strings"
	"time"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"

	"github.com/nanobot-go/nanobot/channels"
	"github.com/nanobot-go/nanobot/gateway/bus"
)

// Send implements channels.Channel: one mail to the chat's address, in the
// thread of the mail it answers (metadata from the inbound mail).
func (c *Channel) Send(ctx context.Context, m bus.Outbound) (channels.MessageRef, error) {
	to, err := mail.ParseAddress(m.ChatID)
	if err != nil {
		return channels.MessageRef{}, &channels.PermanentError{Err: fmt.Errorf("email: %q is not an address", m.ChatID)}
	}
	if strings.TrimSpace(m.Content) == "" {
		return channels.MessageRef{}, &channels.PermanentError{Err: errors.New("email: empty message")}
	}
	msg, id := c.compose(to.Address, m)
	if err := c.sendMail(ctx, to.Address, msg); err != nil {
		return channels.MessageRef{}, err
	}
	return channels.MessageRef{ChatID: m.ChatID, MessageID: id}, nil
}

// compose writes the mail: a threaded reply when the metadata names the
// mail answered, plain text (Markdown reads well as it is).
func (c *Channel) compose(to string, m bus.Outbound) ([]byte, string) {
	meta := func(k string) string { s, _ := m.Metadata[k].(string); return s }
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
	h("Content-Type", "text/plain; charset=utf-8")
	h("Content-Transfer-Encoding", "8bit")
	b.WriteString("\r\n")
	body := strings.ReplaceAll(m.Content, "\r\n", "\n")
	b.WriteString(strings.ReplaceAll(body, "\n", "\r\n"))
	b.WriteString("\r\n")
	return b.Bytes(), id
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
		return fmt.Errorf("email: SMTP %s: %s", addr, c.redact(err.Error()))
	}
	defer cli.Close()
	if dl, ok := ctx.Deadline(); ok {
		cli.CommandTimeout, cli.SubmissionTimeout = time.Until(dl), time.Until(dl)
	}
	if c.cfg.SMTPUsername != "" {
		if _, isTLS := cli.TLSConnectionState(); !isTLS && !c.cfg.AllowInsecure {
			return &channels.PermanentError{Err: errors.New("email: refusing to send the SMTP password over an unencrypted connection")}
		}
		if err := cli.Auth(sasl.NewPlainClient("", c.cfg.SMTPUsername, c.cfg.SMTPPassword)); err != nil {
			return &channels.PermanentError{Err: fmt.Errorf("email: SMTP login refused: %s", c.redact(err.Error()))}
		}
	}
	if err := cli.SendMail(c.cfg.from(), []string{to}, bytes.NewReader(msg)); err != nil {
		var se *smtp.SMTPError
		if errors.As(err, &se) && se.Code >= 500 {
			return &channels.PermanentError{Err: fmt.Errorf("email: SMTP refused the mail: %s", c.redact(err.Error()))}
		}
		return fmt.Errorf("email: SMTP: %s", c.redact(err.Error()))
	}
	return cli.Quit()
}
