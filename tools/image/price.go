package image

import "strings"

// cost is what a call cost in US dollars, or nil when unknown: the
// configured price per image, else OpenAI's list prices (per image for
// DALL·E, per token for gpt-image-1 when the server reports usage).
func (t *Tool) cost(size string, images int, u *struct {
	InputTokens  int64 `json:"input_tokens"`
	OutputTokens int64 `json:"output_tokens"`
}) *float64 {
	var c float64
	switch model := strings.ToLower(t.opts.Model); {
	case t.opts.PricePerImage > 0:
		c = t.opts.PricePerImage * float64(images)
	case model == "gpt-image-1" && u != nil:
		// US dollars per million tokens: text input 5, image output 40.
		c = (float64(u.InputTokens)*5 + float64(u.OutputTokens)*40) / 1e6
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
	default:
		return nil
	}
	return &c
}
