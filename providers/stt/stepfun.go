package stt

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/nanobot-go/nanobot/providers"
)

// stepFunFormats are the format types StepFun's ASR endpoint reads; other
// files are sent as "wav", as nanobot does, and the service decides.
var stepFunFormats = map[string]bool{"ogg": true, "mp3": true, "wav": true, "pcm": true}

// stepFun sends the audio to StepFun's SSE endpoint and reads the events
// up to the final transcript ("transcript.text.done"); an "error" event
// is ErrFailed, a stream that ends without the transcript is tried again.
func (c *Client) stepFun(ctx context.Context, a audioFile) (string, error) {
	format := a.format()
	if !stepFunFormats[format] {
		format = "wav"
	}
	transcription := map[string]any{"model": c.cfg.Model, "enable_itn": true}
	if c.cfg.Language != "" {
		transcription["language"] = c.cfg.Language
	}
	body, err := json.Marshal(map[string]any{"audio": map[string]any{
		"data":  base64.StdEncoding.EncodeToString(a.data),
		"input": map[string]any{"transcription": transcription, "format": map[string]string{"type": format}},
	}})
	if err != nil {
		return "", err
	}
	h := c.header("application/json")
	h.Set("Accept", "text/event-stream")
	var text string
	err = c.retrying(ctx, func(ctx context.Context) error {
		resp, err := c.do(ctx, http.MethodPost, c.endpoint("audio/asr/sse"), h, body)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			_, err := c.answer(ctx, resp)
			return err
		}
		text, err = c.readStepFun(ctx, resp)
		return err
	})
	return text, err
}

// readStepFun reads the event stream, at most maxAnswer bytes of it.
func (c *Client) readStepFun(ctx context.Context, resp *http.Response) (string, error) {
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 64<<10), maxAnswer)
	read := 0
	for sc.Scan() {
		line := sc.Text()
		if read += len(line) + 1; read > maxAnswer {
			break
		}
		data, ok := strings.CutPrefix(line, "data:")
		if !ok {
			continue
		}
		var ev struct {
			Type    string `json:"type"`
			Text    string `json:"text"`
			Message string `json:"message"`
		}
		if json.Unmarshal([]byte(strings.TrimSpace(data)), &ev) != nil {
			continue
		}
		switch ev.Type {
		case "transcript.text.done":
			return ev.Text, nil
		case "error":
			msg := ev.Message
			if msg == "" {
				msg = "error event"
			}
			return "", fmt.Errorf("%s: %s: %w", c.name, clip(providers.Redact(msg, c.cfg.APIKey), 300), ErrFailed)
		}
	}
	if err := sc.Err(); err != nil {
		return "", c.netError(ctx, err)
	}
	if read > maxAnswer {
		return "", &providers.Error{Provider: c.name, Message: fmt.Sprintf("event stream longer than %d KB without a transcript", maxAnswer>>10)}
	}
	return "", &providers.Error{Provider: c.name, Message: "the event stream ended before the transcript", Transient: true, Err: providers.ErrStreamTruncated}
}
