package telegram

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// transcribe sends an audio file to the Whisper-compatible endpoint
// (POST {apiBase}/audio/transcriptions, multipart "file" and "model") and
// returns the text.
func (c *Channel) transcribe(ctx context.Context, file string) (string, error) {
	tc := c.cfg.Transcription
	data, err := os.ReadFile(file)
	if err != nil {
		return "", fmt.Errorf("transcribe: %w", err)
	}
	model := tc.Model
	if model == "" {
		model = "whisper-1"
	}
	var body bytes.Buffer
	form := multipart.NewWriter(&body)
	part, err := form.CreateFormFile("file", filepath.Base(file))
	if err != nil {
		return "", fmt.Errorf("transcribe: %w", err)
	}
	_, _ = part.Write(data)
	_ = form.WriteField("model", model)
	_ = form.WriteField("response_format", "json")
	if tc.Language != "" {
		_ = form.WriteField("language", tc.Language)
	}
	if err := form.Close(); err != nil {
		return "", fmt.Errorf("transcribe: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	endpoint := strings.TrimRight(tc.APIBase, "/") + "/audio/transcriptions"
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, &body)
	if err != nil {
		return "", fmt.Errorf("transcribe: %w", err)
	}
	req.Header.Set("Content-Type", form.FormDataContentType())
	if tc.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+tc.APIKey)
	}
	resp, err := c.stt.Do(req)
	if err != nil {
		return "", fmt.Errorf("transcribe: %w", err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return "", fmt.Errorf("transcribe: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("transcribe: HTTP %d: %.200s", resp.StatusCode, raw)
	}
	var out struct {
		Text string `json:"text"`
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		return "", fmt.Errorf("transcribe: bad response: %w", err)
	}
	return out.Text, nil
}
