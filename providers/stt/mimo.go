package stt

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
)

// mimo asks Xiaomi MiMo's ASR model through chat completions: one user
// message whose only part is the audio as a data URL, the language hint
// in asr_options. The transcript is the answer's message content.
func (c *Client) mimo(ctx context.Context, a audioFile) (string, error) {
	part := map[string]any{
		"type":        "input_audio",
		"input_audio": map[string]string{"data": "data:" + a.mime + ";base64," + base64.StdEncoding.EncodeToString(a.data)},
	}
	req := map[string]any{
		"model":    c.cfg.Model,
		"messages": []map[string]any{{"role": "user", "content": []any{part}}},
	}
	if c.cfg.Language != "" {
		req["asr_options"] = map[string]string{"language": c.cfg.Language}
	}
	body, err := json.Marshal(req)
	if err != nil {
		return "", err
	}
	raw, err := c.call(ctx, http.MethodPost, c.endpoint("chat/completions"), c.header("application/json"), body)
	if err != nil {
		return "", err
	}
	var out struct {
		Choices []struct {
			Message struct {
				Content *string `json:"content"`
			} `json:"message"`
		} `json:"choices"`
	}
	if err := json.Unmarshal(raw, &out); err != nil || len(out.Choices) == 0 || out.Choices[0].Message.Content == nil {
		return "", c.badAnswer(raw)
	}
	return *out.Choices[0].Message.Content, nil
}
