package image

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
)

// geminiAnswer is the part of a generateContent answer the tool reads.
type geminiAnswer struct {
	Candidates []struct {
		Content struct {
			Parts []struct {
				Text       string `json:"text"`
				InlineData *struct {
					MimeType string `json:"mimeType"`
					Data     string `json:"data"`
				} `json:"inlineData"`
			} `json:"parts"`
		} `json:"content"`
		FinishReason string `json:"finishReason"`
	} `json:"candidates"`
	PromptFeedback *struct {
		BlockReason string `json:"blockReason"`
	} `json:"promptFeedback"`
	UsageMetadata *struct {
		PromptTokenCount     int64 `json:"promptTokenCount"`
		CandidatesTokenCount int64 `json:"candidatesTokenCount"`
	} `json:"usageMetadata"`
}

// imagenAnswer is the answer of an Imagen :predict call.
type imagenAnswer struct {
	Predictions []struct {
		BytesBase64Encoded string `json:"bytesBase64Encoded"`
		MimeType           string `json:"mimeType"`
		RAIFilteredReason  string `json:"raiFilteredReason"`
	} `json:"predictions"`
}

// geminiBase is the native API's base: the registry's default apiBase for
// gemini is the OpenAI-compatible layer (…/v1beta/openai), whose parent
// is the native API.
func (t *Tool) geminiBase() string {
	return strings.TrimSuffix(t.base(), "/openai")
}

func (t *Tool) geminiModel() string {
	return url.PathEscape(strings.TrimPrefix(t.opts.Model, "models/"))
}

func (t *Tool) geminiHeaders() map[string]string {
	if t.opts.APIKey == "" {
		return nil
	}
	return map[string]string{"x-goog-api-key": t.opts.APIKey}
}

// gemini draws n images: Imagen models in one :predict call, Gemini image
// models with one generateContent call per image (they return one image
// per answer).
func (t *Tool) gemini(ctx context.Context, prompt, size string, n int) (*batch, error) {
	ar := aspectRatio(size)
	if strings.HasPrefix(t.geminiModel(), "imagen") {
		params := map[string]any{"sampleCount": n}
		if ar != "" {
			params["aspectRatio"] = ar
		}
		var ans imagenAnswer
		body := map[string]any{"instances": []any{map[string]any{"prompt": prompt}}, "parameters": params}
		if err := t.post(ctx, t.geminiBase()+"/models/"+t.geminiModel()+":predict", body, t.geminiHeaders(), &ans); err != nil {
			return nil, err
		}
		b := &batch{}
		for _, p := range ans.Predictions {
			if p.BytesBase64Encoded == "" && p.RAIFilteredReason != "" {
				return nil, fmt.Errorf("generate_image: the image was filtered: %s", p.RAIFilteredReason)
			}
			b.images = append(b.images, picture{b64: p.BytesBase64Encoded})
		}
		return b, nil
	}

	gen := map[string]any{"responseModalities": []any{"TEXT", "IMAGE"}}
	if ar != "" {
		gen["imageConfig"] = map[string]any{"aspectRatio": ar}
	}
	body := map[string]any{
		"contents":         []any{map[string]any{"role": "user", "parts": []any{map[string]any{"text": prompt}}}},
		"generationConfig": gen,
	}
	b := &batch{}
	for range n {
		var ans geminiAnswer
		if err := t.post(ctx, t.geminiBase()+"/models/"+t.geminiModel()+":generateContent", body, t.geminiHeaders(), &ans); err != nil {
			return nil, err
		}
		if u := ans.UsageMetadata; u != nil {
			b.usage = true
			b.input += u.PromptTokenCount
			b.output += u.CandidatesTokenCount
		}
		pic, err := geminiPicture(ans)
		if err != nil {
			return nil, err
		}
		b.images = append(b.images, pic)
	}
	return b, nil
}

// geminiPicture is the first image of an answer, with the model's text as
// the note; an answer without one says why.
func geminiPicture(ans geminiAnswer) (picture, error) {
	if f := ans.PromptFeedback; f != nil && f.BlockReason != "" {
		return picture{}, fmt.Errorf("generate_image: the prompt was blocked: %s", f.BlockReason)
	}
	if len(ans.Candidates) == 0 {
		return picture{}, errors.New("generate_image: the answer has no candidates")
	}
	c := ans.Candidates[0]
	var text []string
	var pic picture
	for _, p := range c.Content.Parts {
		switch {
		case p.InlineData != nil && strings.HasPrefix(p.InlineData.MimeType, "image/") && pic.b64 == "":
			pic.b64 = p.InlineData.Data
		case p.Text != "":
			text = append(text, strings.TrimSpace(p.Text))
		}
	}
	said := strings.Join(text, " ")
	if pic.b64 == "" {
		if said != "" {
			return picture{}, fmt.Errorf("generate_image: the model answered without an image (finish reason %s): %s", c.FinishReason, truncate(said, 300))
		}
		return picture{}, fmt.Errorf("generate_image: the model answered without an image (finish reason %s)", c.FinishReason)
	}
	if said != "" {
		pic.note = "the model says: " + truncate(said, 300)
	}
	return pic, nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && (s[n]&0xC0) == 0x80 {
		n--
	}
	return s[:n] + "…"
}
