package image

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// openRouterAnswer is the part of an OpenRouter chat completion with
// image output the tool reads.
type openRouterAnswer struct {
	Choices []struct {
		Message struct {
			Content string `json:"content"`
			Images  []struct {
				ImageURL struct {
					URL string `json:"url"`
				} `json:"image_url"`
			} `json:"images"`
		} `json:"message"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens     int64    `json:"prompt_tokens"`
		CompletionTokens int64    `json:"completion_tokens"`
		Cost             *float64 `json:"cost"`
	} `json:"usage"`
}

// openRouter draws n images with one chat completion each (image models
// answer one image per completion), asking for usage accounting so the
// ledger gets OpenRouter's own cost.
func (t *Tool) openRouter(ctx context.Context, prompt, size string, n int) (*batch, error) {
	body := map[string]any{
		"model":      t.opts.Model,
		"messages":   []any{map[string]any{"role": "user", "content": prompt}},
		"modalities": []any{"image", "text"},
		"usage":      map[string]any{"include": true},
	}
	if ar := aspectRatio(size); ar != "" {
		body["image_config"] = map[string]any{"aspect_ratio": ar}
	}
	b := &batch{}
	var cost float64
	costKnown := true
	for range n {
		var ans openRouterAnswer
		if err := t.post(ctx, t.base()+"/chat/completions", body, bearer(t.opts.APIKey), &ans); err != nil {
			return nil, err
		}
		if u := ans.Usage; u != nil {
			b.usage = true
			b.input += u.PromptTokens
			b.output += u.CompletionTokens
			if u.Cost != nil {
				cost += *u.Cost
			} else {
				costKnown = false
			}
		} else {
			costKnown = false
		}
		if len(ans.Choices) == 0 {
			return nil, errors.New("generate_image: the answer has no choices")
		}
		msg := ans.Choices[0].Message
		if len(msg.Images) == 0 {
			said := strings.TrimSpace(msg.Content)
			if said != "" {
				return nil, fmt.Errorf("generate_image: the model answered without an image (is %s an image model?): %s", t.opts.Model, truncate(said, 300))
			}
			return nil, fmt.Errorf("generate_image: the model answered without an image (is %s an image model?)", t.opts.Model)
		}
		for _, im := range msg.Images {
			b64, err := dataURL(im.ImageURL.URL)
			if err != nil {
				return nil, err
			}
			pic := picture{b64: b64}
			if said := strings.TrimSpace(msg.Content); said != "" {
				pic.note = "the model says: " + truncate(said, 300)
			}
			b.images = append(b.images, pic)
		}
	}
	if costKnown {
		b.cost = &cost
	}
	return b, nil
}

// dataURL returns the base64 payload of a data:image/…;base64, URL; any
// other URL is refused rather than fetched.
func dataURL(u string) (string, error) {
	rest, ok := strings.CutPrefix(u, "data:")
	if !ok {
		return "", errors.New("generate_image: the server sent an image URL, not data: this tool does not fetch URLs")
	}
	meta, data, ok := strings.Cut(rest, ",")
	if !ok || !strings.HasSuffix(meta, ";base64") || !strings.HasPrefix(meta, "image/") {
		return "", fmt.Errorf("generate_image: the server sent a data URL that is not a base64 image (%.40s)", meta)
	}
	return data, nil
}
