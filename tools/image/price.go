package image

import "strings"

// Per-image list prices in US dollars of Google's image models (Gemini
// API, paid tier, as of late 2025). gemini-2.5-flash-image bills 1290
// output tokens an image at $30 per million.
var googlePerImage = map[string]float64{
	"gemini-2.5-flash-image":         0.039,
	"gemini-2.5-flash-image-preview": 0.039,
	"imagen-4.0-generate-001":        0.04,
	"imagen-4.0-fast-generate-001":   0.02,
	"imagen-4.0-ultra-generate-001":  0.06,
	"imagen-3.0-generate-002":        0.03,
}

// cost is what a call cost in US dollars, or nil when unknown: the
// configured price per image, else the service's own figure (OpenRouter),
// else list prices (OpenAI per image for DALL·E, per token for
// gpt-image-1 when the server reports usage; Google per image).
func (t *Tool) cost(size string, b *batch) *float64 {
	images := len(b.images)
	var c float64
	switch model := strings.TrimPrefix(strings.ToLower(t.opts.Model), "models/"); {
	case t.opts.PricePerImage > 0:
		c = t.opts.PricePerImage * float64(images)
	case b.cost != nil:
		c = *b.cost
	case t.opts.API == APIOpenRouter:
		return nil // a name there is not OpenAI's or Google's price
	case model == "gpt-image-1" && b.usage:
		// US dollars per million tokens: text input 5, image output 40.
		c = (float64(b.input)*5 + float64(b.output)*40) / 1e6
	case model == "dall-e-3":
		per := 0.04
		if size == "1792x1024" || size == "1024x1792" {
			per = 0.08
		}
		c = per * float64(images)
	case model == "dall-e-2":
		per := map[string]float64{"256x256": 0.016, "512x512": 0.018}[size]
		if per == 0 {
			per = 0.02
		}
		c = per * float64(images)
	case t.opts.API == APIGemini && googlePerImage[model] > 0:
		c = googlePerImage[model] * float64(images)
	default:
		return nil
	}
	return &c
}
