package stt

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"strings"

	"github.com/nanobot-go/nanobot/providers"
)

const transcriptionsPath = "audio/transcriptions"

// whisper sends the file as OpenAI's endpoint takes it: multipart "file"
// (with its content type), "model", "response_format" json and, when
// set, "language".
func (c *Client) whisper(ctx context.Context, a audioFile) (string, error) {
	var body bytes.Buffer
	form := multipart.NewWriter(&body)
	h := textproto.MIMEHeader{}
	h.Set("Content-Disposition", fmt.Sprintf(`form-data; name="file"; filename=%q`, a.uploadName()))
	h.Set("Content-Type", a.mime)
	part, err := form.CreatePart(h)
	if err != nil {
		return "", err
	}
	_, _ = part.Write(a.data)
	_ = form.WriteField("model", c.cfg.Model)
	_ = form.WriteField("response_format", "json")
	if c.cfg.Language != "" && c.name != "stepfun" { // step-asr takes no language
		_ = form.WriteField("language", c.cfg.Language)
	}
	if err := form.Close(); err != nil {
		return "", err
	}
	raw, err := c.call(ctx, http.MethodPost, c.endpoint(transcriptionsPath), c.header(form.FormDataContentType()), body.Bytes())
	if err != nil {
		return "", err
	}
	return c.textOf(raw)
}

// openRouter sends the file base64-encoded in a JSON body, the only shape
// OpenRouter's transcription endpoint documents.
func (c *Client) openRouter(ctx context.Context, a audioFile) (string, error) {
	req := map[string]any{
		"model":       c.cfg.Model,
		"input_audio": map[string]string{"data": base64.StdEncoding.EncodeToString(a.data), "format": a.format()},
	}
	if c.cfg.Language != "" {
		req["language"] = c.cfg.Language
	}
	body, err := json.Marshal(req)
	if err != nil {
		return "", err
	}
	raw, err := c.call(ctx, http.MethodPost, c.endpoint(transcriptionsPath), c.header("application/json"), body)
	if err != nil {
		return "", err
	}
	return c.textOf(raw)
}

// textOf reads {"text": ...}.
func (c *Client) textOf(raw []byte) (string, error) {
	var out struct {
		Text *string `json:"text"`
	}
	if err := json.Unmarshal(raw, &out); err != nil || out.Text == nil {
		return "", c.badAnswer(raw)
	}
	return *out.Text, nil
}

// badAnswer is the error of a 2xx answer that is not what the API
// documents (a proxy's page, a changed API).
func (c *Client) badAnswer(raw []byte) error {
	return fmt.Errorf("%s: unexpected answer %q", c.name, clip(providers.Redact(strings.TrimSpace(string(raw)), c.cfg.APIKey), 120))
}
