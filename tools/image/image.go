// Package image is the generate_image tool: it asks an OpenAI-compatible
// POST {apiBase}/images/generations endpoint for images (base64 in the
// answer, never URLs to fetch), saves each 0600 under the media folder's
// "generated" folder, and tells the model the paths so it can send them
// with the message tool. Each call is recorded in the usage ledger as a
// record of kind "image" with its cost when the price is known.
//
// The tool is safe for concurrent use; it does no IO until Execute.
package image

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"time"

	"github.com/nanobot-go/nanobot/agent/usage"
	"github.com/nanobot-go/nanobot/internal/atomicfile"
	"github.com/nanobot-go/nanobot/providers"
	"github.com/nanobot-go/nanobot/tools"
)

// Defaults of Options.
const (
	DefaultModel = "gpt-image-1"
	DefaultSize  = "1024x1024"
	MaxImages    = 4
	// GeneratedDir is the folder under the media folder images go to.
	GeneratedDir  = "generated"
	maxAnswerSize = 64 << 20
)

// Sizes the tool offers; the server decides which its model takes.
var Sizes = []string{"auto", "1024x1024", "1536x1024", "1024x1536", "1792x1024", "1024x1792", "512x512", "256x256"}

// Options configures the tool.
type Options struct {
	// APIBase is the endpoint up to /v1; APIKey its bearer token.
	APIBase, APIKey string
	// Provider is the provider config name, for the ledger.
	Provider string
	// Model is the image model (default gpt-image-1; dall-e-3, dall-e-2).
	Model string
	// MediaDir is the media folder; images go to MediaDir/generated.
	MediaDir string
	// PricePerImage, when > 0, is the cost of one image in US dollars;
	// otherwise the built-in table prices known models.
	PricePerImage float64
	// Ledger records each call (optional).
	Ledger *usage.Ledger
	// HTTPClient overrides the client (default: 3-minute timeout).
	HTTPClient *http.Client
	Logger     *slog.Logger
}

// Tool is generate_image.
type Tool struct {
	opts Options
	log  *slog.Logger
}

var _ tools.Tool = (*Tool)(nil)

// New builds the tool. It does no IO.
func New(opts Options) (*Tool, error) {
	if opts.APIBase == "" {
		return nil, errors.New("generate_image: no apiBase")
	}
	if opts.MediaDir == "" {
		return nil, errors.New("generate_image: no media folder")
	}
	if opts.Model == "" {
		opts.Model = DefaultModel
	}
	if opts.HTTPClient == nil {
		opts.HTTPClient = &http.Client{Timeout: 3 * time.Minute}
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Tool{opts: opts, log: log.With("tool", "generate_image")}, nil
}

// Name implements tools.Tool.
func (t *Tool) Name() string { return "generate_image" }

// Description implements tools.Tool.
func (t *Tool) Description() string {
	return "Generate images from a text prompt. The images are saved as files; send them to the user with the message tool (its files parameter) and the paths this returns."
}

// Parameters implements tools.Tool.
func (t *Tool) Parameters() map[string]any {
	sizes := make([]any, len(Sizes))
	for i, s := range Sizes {
		sizes[i] = s
	}
	return map[string]any{
		"type": "object",
		"properties": map[string]any{
			"prompt": map[string]any{"type": "string", "description": "What to draw, in detail.", "minLength": 1},
			"size":   map[string]any{"type": "string", "enum": sizes, "description": "Width x height (default " + DefaultSize + ")."},
			"n":      map[string]any{"type": "integer", "minimum": 1, "maximum": MaxImages, "description": "How many images (default 1)."},
		},
		"required": []any{"prompt"},
	}
}

type answer struct {
	Data []struct {
		B64JSON       string `json:"b64_json"`
		URL           string `json:"url"`
		RevisedPrompt string `json:"revised_prompt"`
	} `json:"data"`
	Usage *struct {
		InputTokens  int64 `json:"input_tokens"`
		OutputTokens int64 `json:"output_tokens"`
	} `json:"usage"`
}

// Execute implements tools.Tool.
func (t *Tool) Execute(ctx context.Context, args map[string]any) (tools.Result, error) {
	prompt, _ := args["prompt"].(string)
	if strings.TrimSpace(prompt) == "" {
		return tools.Result{}, errors.New("prompt is empty")
	}
	size, _ := args["size"].(string)
	if size == "" {
		size = DefaultSize
	}
	n := 1
	switch v := args["n"].(type) {
	case int:
		n = v
	case int64:
		n = int(v)
	case float64:
		n = int(v)
	}
	n = min(max(n, 1), MaxImages)

	start := time.Now()
	ans, err := t.call(ctx, prompt, size, n)
	rec := usage.Record{Kind: usage.KindImage, Provider: t.opts.Provider, Model: t.opts.Model, Latency: time.Since(start), Outcome: usage.OutcomeOK}
	if cc, ok := tools.CallContextFrom(ctx); ok {
		rec.Channel, rec.Chat, rec.Session, rec.Sender, rec.Source = cc.Channel, cc.ChatID, cc.SessionKey, cc.SenderID, cc.Source
	}
	if err != nil {
		rec.Outcome = usage.OutcomeError
		t.record(rec)
		return tools.Result{}, err
	}
	if ans.Usage != nil {
		rec.Input, rec.Output = ans.Usage.InputTokens, ans.Usage.OutputTokens
	}
	rec.CostUSD = t.cost(size, len(ans.Data), ans.Usage)
	t.record(rec)

	var paths, notes []string
	for i, d := range ans.Data {
		if d.B64JSON == "" {
			return tools.Result{}, fmt.Errorf("image %d: the server sent no b64_json (a URL instead?): this tool needs base64 images", i+1)
		}
		data, err := base64.StdEncoding.DecodeString(d.B64JSON)
		if err != nil {
			return tools.Result{}, fmt.Errorf("image %d: bad base64: %w", i+1, err)
		}
		p, err := t.save(data)
		if err != nil {
			return tools.Result{}, err
		}
		paths = append(paths, p)
		if d.RevisedPrompt != "" {
			notes = append(notes, fmt.Sprintf("image %d prompt as revised by the model: %s", i+1, d.RevisedPrompt))
		}
	}
	if len(paths) == 0 {
		return tools.Result{}, errors.New("the server returned no images")
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Generated %d image(s):\n", len(paths))
	for _, p := range paths {
		b.WriteString("- " + p + "\n")
	}
	b.WriteString("Send them with the message tool (files: these paths).")
	for _, n := range notes {
		b.WriteString("\n" + n)
	}
	return tools.Result{Content: b.String()}, nil
}

func (t *Tool) call(ctx context.Context, prompt, size string, n int) (*answer, error) {
	body := map[string]any{"model": t.opts.Model, "prompt": prompt, "n": n}
	if size != "auto" || strings.HasPrefix(t.opts.Model, "gpt-image") {
		body["size"] = size
	}
	if strings.HasPrefix(t.opts.Model, "dall-e") {
		// gpt-image models always answer in base64 and reject the field.
		body["response_format"] = "b64_json"
	}
	b, _ := json.Marshal(body)
	endpoint := strings.TrimRight(t.opts.APIBase, "/") + "/images/generations"
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("generate_image: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	if t.opts.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+t.opts.APIKey)
	}
	resp, err := t.opts.HTTPClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("generate_image: %s", providers.Redact(err.Error(), t.opts.APIKey))
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswerSize))
	if err != nil {
		return nil, fmt.Errorf("generate_image: read answer: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		pe := providers.HTTPError(t.opts.Provider, resp.StatusCode, resp.Header, raw, t.opts.APIKey)
		return nil, fmt.Errorf("generate_image: %w", pe)
	}
	var ans answer
	if err := json.Unmarshal(raw, &ans); err != nil {
		return nil, fmt.Errorf("generate_image: answer is not JSON: %w", err)
	}
	return &ans, nil
}

// save writes one image 0600 under MediaDir/generated.
func (t *Tool) save(data []byte) (string, error) {
	ext := ".png"
	switch http.DetectContentType(data) {
	case "image/jpeg":
		ext = ".jpg"
	case "image/webp":
		ext = ".webp"
	case "image/png":
	default:
		return "", errors.New("the server's image is not PNG, JPEG or WebP")
	}
	var rnd [6]byte
	_, _ = rand.Read(rnd[:])
	p := filepath.Join(t.opts.MediaDir, GeneratedDir, "img-"+time.Now().UTC().Format("20060102-150405")+"-"+hex.EncodeToString(rnd[:])+ext)
	if err := atomicfile.Write(p, data, 0o600); err != nil {
		return "", fmt.Errorf("generate_image: save: %w", err)
	}
	return p, nil
}

func (t *Tool) record(r usage.Record) {
	if t.opts.Ledger == nil {
		return
	}
	if _, err := t.opts.Ledger.Append(r); err != nil {
		t.log.Error("recording image usage failed", "err", err)
	}
}
