package stt

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/nanobot-go/nanobot/providers"
)

// assemblyAI uploads the file, asks for its transcript, and polls until
// the transcript is completed or failed, waiting 1 s between polls at
// first and up to 5 s later, for at most PollTimeout.
func (c *Client) assemblyAI(ctx context.Context, a audioFile) (string, error) {
	raw, err := c.call(ctx, http.MethodPost, c.endpoint("upload"), c.header("application/octet-stream"), a.data)
	if err != nil {
		return "", fmt.Errorf("upload: %w", err)
	}
	var up struct {
		UploadURL string `json:"upload_url"`
	}
	if json.Unmarshal(raw, &up) != nil || up.UploadURL == "" {
		return "", c.badAnswer(raw)
	}

	create := map[string]any{"audio_url": up.UploadURL}
	var models []string
	for m := range strings.SplitSeq(c.cfg.Model, ",") {
		if m = strings.TrimSpace(m); m != "" {
			models = append(models, m)
		}
	}
	if len(models) > 0 {
		create["speech_models"] = models
	}
	if c.cfg.Language != "" {
		create["language_code"] = c.cfg.Language
	} else {
		// Without a language AssemblyAI assumes English.
		create["language_detection"] = true
	}
	body, err := json.Marshal(create)
	if err != nil {
		return "", err
	}
	transcripts := c.endpoint("transcript")
	raw, err = c.call(ctx, http.MethodPost, transcripts, c.header("application/json"), body)
	if err != nil {
		return "", fmt.Errorf("create transcript: %w", err)
	}
	tr, err := c.transcript(raw)
	if err != nil {
		return "", err
	}
	if tr.ID == "" {
		return "", c.badAnswer(raw)
	}

	deadline := time.Now().Add(c.cfg.PollTimeout)
	wait := c.cfg.PollInterval
	poll := transcripts + "/" + url.PathEscape(tr.ID)
	for {
		switch tr.Status {
		case "completed":
			return tr.Text, nil
		case "error":
			msg := tr.Error
			if msg == "" {
				msg = "status error"
			}
			return "", fmt.Errorf("%s: transcript %s: %s: %w", c.name, tr.ID, clip(providers.Redact(msg, c.cfg.APIKey), 300), ErrFailed)
		}
		left := time.Until(deadline)
		if left <= 0 {
			return "", fmt.Errorf("%s: transcript %s still %q after %s: %w", c.name, tr.ID, tr.Status, c.cfg.PollTimeout, ErrTimeout)
		}
		if err := providers.Sleep(ctx, min(wait, left)); err != nil {
			return "", providers.Canceled(c.name, err)
		}
		wait = min(wait*3/2, maxPollInterval)
		raw, err = c.call(ctx, http.MethodGet, poll, c.header(""), nil)
		if err != nil {
			return "", fmt.Errorf("poll transcript %s: %w", tr.ID, err)
		}
		if tr, err = c.transcript(raw); err != nil {
			return "", err
		}
	}
}

// assemblyTranscript is the part of AssemblyAI's transcript object read here.
type assemblyTranscript struct {
	ID     string `json:"id"`
	Status string `json:"status"` // queued, processing, completed, error
	Text   string `json:"text"`
	Error  string `json:"error"`
}

func (c *Client) transcript(raw []byte) (assemblyTranscript, error) {
	var tr assemblyTranscript
	if err := json.Unmarshal(raw, &tr); err != nil {
		return tr, c.badAnswer(raw)
	}
	tr.Status = strings.ToLower(tr.Status)
	return tr, nil
}
