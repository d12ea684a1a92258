package signal

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/channels"
	"github.com/nanobot-go/nanobot/channels/media"
)

// codeRateLimit is signal-cli's error for a send the Signal server rate
// limited (newer versions).
const codeRateLimit = -5

// sendResult is the result of `send`.
type sendResult struct {
	Timestamp int64 `json:"timestamp"`
	Results   []struct {
		Type string `json:"type"` // SUCCESS, UNREGISTERED_FAILURE, ...
	} `json:"results"`
}

// target names the chat in a request: a group id or a recipient.
func target(chatID string, params map[string]any) error {
	if id, ok := strings.CutPrefix(chatID, groupPrefix); ok {
		if id == "" {
			return errors.New("empty group id")
		}
		params["groupId"] = id
		return nil
	}
	if chatID == "" {
		return errors.New("empty chat id")
	}
	params["recipient"] = []string{chatID}
	return nil
}

// Send implements channels.Channel: the text goes out as one Signal
// message; in a group, the answer to a message quotes it.
func (c *Channel) Send(ctx context.Context, m bus.Outbound) (channels.MessageRef, error) {
	text := Format(m.Content)
	if strings.TrimSpace(text) == "" {
		return channels.MessageRef{}, channels.Permanentf("signal: empty message")
	}
	return c.send(ctx, m, text, nil)
}

// SendMedia implements channels.MediaSender: local files go as data: URIs
// (signal-cli need not see the gateway's disk), with the text as caption;
// files known only by URL are linked in the text.
func (c *Channel) SendMedia(ctx context.Context, m bus.Outbound) (channels.MessageRef, error) {
	var attachments []string
	text := Format(m.Content)
	for _, md := range m.Media {
		if md.Path == "" {
			if md.URL != "" {
				text = strings.TrimSpace(text + "\n" + md.URL)
			}
			continue
		}
		uri, err := c.dataURI(md)
		if err != nil {
			return channels.MessageRef{}, &channels.PermanentError{Err: err}
		}
		attachments = append(attachments, uri)
	}
	if len(attachments) == 0 && strings.TrimSpace(text) == "" {
		return channels.MessageRef{}, channels.Permanentf("signal: nothing to send")
	}
	return c.send(ctx, m, text, attachments)
}

// dataURI reads a file into signal-cli's data URI form
// ("data:<mime>;filename=<name>;base64,<data>").
func (c *Channel) dataURI(md bus.Media) (string, error) {
	fi, err := os.Stat(md.Path)
	if err != nil {
		return "", fmt.Errorf("signal: attachment: %w", err)
	}
	if fi.Size() > c.cfg.MaxMediaBytes {
		return "", fmt.Errorf("signal: attachment %s is %s, over maxMediaBytes (%s)", filepath.Base(md.Path), media.Size(fi.Size()), media.Size(c.cfg.MaxMediaBytes))
	}
	data, err := os.ReadFile(md.Path)
	if err != nil {
		return "", fmt.Errorf("signal: attachment: %w", err)
	}
	mt := md.MIMEType
	if mt == "" {
		mt = mime.TypeByExtension(filepath.Ext(md.Path))
	}
	if mt == "" {
		mt = http.DetectContentType(data)
	}
	if i := strings.IndexByte(mt, ';'); i >= 0 {
		mt = mt[:i]
	}
	name := md.Name
	if name == "" {
		name = filepath.Base(md.Path)
	}
	return "data:" + mt + ";filename=" + media.SafeName(name) + ";base64," + base64.StdEncoding.EncodeToString(data), nil
}

func (c *Channel) send(ctx context.Context, m bus.Outbound, text string, attachments []string) (channels.MessageRef, error) {
	params := map[string]any{"message": text}
	if err := target(m.ChatID, params); err != nil {
		return channels.MessageRef{}, channels.Permanentf("signal: send: %w", err)
	}
	if len(attachments) > 0 {
		params["attachments"] = attachments
	}
	if _, group := params["groupId"]; group && m.ReplyTo != "" && m.ReplyTo == m.Metadata["timestamp"] && m.Metadata["author"] != "" {
		if ts, err := strconv.ParseInt(m.ReplyTo, 10, 64); err == nil {
			params["quoteTimestamp"], params["quoteAuthor"] = ts, m.Metadata["author"]
		}
	}
	var res sendResult
	if err := c.call(ctx, "send", params, &res); err != nil {
		return channels.MessageRef{}, classify(err)
	}
	if err := results(res); err != nil {
		return channels.MessageRef{}, err
	}
	return channels.MessageRef{ChatID: m.ChatID, MessageID: strconv.FormatInt(res.Timestamp, 10)}, nil
}

// results turns per-recipient failures into an error when nobody got the
// message.
func results(res sendResult) error {
	if len(res.Results) == 0 {
		return nil
	}
	var types []string
	for _, r := range res.Results {
		if r.Type == "SUCCESS" {
			return nil
		}
		types = append(types, r.Type)
	}
	err := fmt.Errorf("signal: send: no recipient got the message (%s)", strings.Join(types, ", "))
	switch types[0] {
	case "RATE_LIMIT_FAILURE":
		return &channels.RetryAfterError{After: 30 * time.Second, Err: err}
	case "NETWORK_FAILURE":
		return err
	}
	return &channels.PermanentError{Err: err}
}

// classify marks signal-cli's refusals: a user error (unknown recipient or
// group, bad attachment) or an untrusted identity cannot be fixed by
// retrying; a rate limit waits.
func classify(err error) error {
	var re *RPCError
	if !errors.As(err, &re) {
		return err
	}
	switch re.Code {
	case codeUserError, codeUntrustedKey, codeInvalidParams, codeInvalidReq, codeNoMethod:
		return &channels.PermanentError{Err: err}
	case codeRateLimit:
		return &channels.RetryAfterError{After: 30 * time.Second, Err: err}
	}
	return err
}

// Typing implements channels.Typer: Signal shows "typing…" for about 15 s
// per call.
func (c *Channel) Typing(ctx context.Context, chatID string, _ bus.Metadata) error {
	params := map[string]any{}
	if err := target(chatID, params); err != nil {
		return channels.Permanentf("signal: sendTyping: %w", err)
	}
	return classify(c.call(ctx, "sendTyping", params, nil))
}
