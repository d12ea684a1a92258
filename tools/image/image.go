// Package image is the generate_image tool: it asks an image service for
// pictures (base64 in the answer, never URLs to fetch), saves each 0600
// under the media folder's "generated" folder, and tells the model the
// paths so it can send them with the message tool. Each call is recorded
// in the usage ledger as a record of kind "image" with its cost when the
// price is known. Three wire formats (Options.API):
//
//   - "openai": POST {apiBase}/images/generations (OpenAI and compatible
//     servers);
//   - "gemini": Gemini's native API, POST {apiBase}/models/{model}:generateContent
//     with responseModalities IMAGE (gemini-2.5-flash-image; the image is an
//     inlineData part), or {apiBase}/models/{model}:predict for Imagen models;
//   - "openrouter": POST {apiBase}/chat/completions with modalities
//     ["image","text"]; the images are data URLs in message.images.
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

// Wire formats of Options.API.
const (
	APIOpenAI     = "openai"
	APIGemini     = "gemini"
	APIOpenRouter = "openrouter"
)

// Options configures the tool.
type Options struct {
	// APIBase is the endpoint up to /v1 (Gemini: up to /v1beta); APIKey
	// its key.
	APIBase, APIKey string
	// API is the wire format: APIOpenAI (default), APIGemini or
	// APIOpenRouter.
	API string
	// Provider is the provider config name, for the ledger.
	Provider string
	// Model is the image model (default gpt-image-1; dall-e-3, dall-e-2).
	Model string
	// MediaDir is the media folder; images go to MediaDir/generated.
	MediaDir string
	// PricePerImage, when > 0, is the cost of one image in US dollars;
	// otherwise the built-in table prices known models.
	PricePerImage float64
	// Record is told each call, failed ones too (optional): the agent puts
	// it in the usage ledger (usage.ImageRecorder).
	Record func(ctx context.Context, c Call)
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
	switch opts.API {
	case "":
		opts.API = APIOpenAI
	case APIOpenAI, APIGemini, APIOpenRouter:
	default:
		return nil, fmt.Errorf("generate_image: unknown api %q (want openai, gemini or openrouter)", opts.API)
	}
	if opts.Model == "" {
		if opts.API != APIOpenAI {
			return nil, fmt.Errorf("generate_image: the %s api needs a model (tools.image.model)", opts.API)
		}
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

// batch is what the service returned for one tool call.
type batch struct {
	images []picture
	// input and output are the tokens the service reported (usage: whether
	// it reported any).
	input, output int64
	usage         bool
	// cost is the service's own figure for the call (OpenRouter), if any.
	cost *float64
}

// picture is one image as base64 (without a data: prefix), with the
// prompt as the model revised it, or the text it said about the image.
type picture struct {
	b64, note string
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
	var ans *batch
	var err error
	switch t.opts.API {
	case APIGemini:
		ans, err = t.gemini(ctx, prompt, size, n)
	case APIOpenRouter:
		ans, err = t.openRouter(ctx, prompt, size, n)
	default:
		ans, err = t.openAI(ctx, prompt, size, n)
	}
	call := Call{Provider: t.opts.Provider, Model: t.opts.Model, Latency: time.Since(start), Err: err}
	if err != nil {
		t.record(ctx, call)
		return tools.Result{}, err
	}
	call.Input, call.Output = ans.input, ans.output
	call.CostUSD = t.cost(size, ans)
	t.record(ctx, call)

	var paths, notes []string
	for i, d := range ans.images {
		if d.b64 == "" {
			return tools.Result{}, fmt.Errorf("image %d: the server sent no base64 image (a URL instead?): this tool needs base64 images", i+1)
		}
		data, err := base64.StdEncoding.DecodeString(d.b64)
		if err != nil {
			return tools.Result{}, fmt.Errorf("image %d: bad base64: %w", i+1, err)
		}
		p, err := t.save(data)
		if err != nil {
			return tools.Result{}, err
		}
		paths = append(paths, p)
		if d.note != "" {
			notes = append(notes, fmt.Sprintf("image %d: %s", i+1, d.note))
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

// openAIAnswer is the answer of /images/generations.
type openAIAnswer struct {
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

func (t *Tool) openAI(ctx context.Context, prompt, size string, n int) (*batch, error) {
	body := map[string]any{"model": t.opts.Model, "prompt": prompt, "n": n}
	if size != "auto" || strings.HasPrefix(t.opts.Model, "gpt-image") {
		body["size"] = size
	}
	if strings.HasPrefix(t.opts.Model, "dall-e") {
		// gpt-image models always answer in base64 and reject the field.
		body["response_format"] = "b64_json"
	}
	var ans openAIAnswer
	if err := t.post(ctx, t.base()+"/images/generations", body, bearer(t.opts.APIKey), &ans); err != nil {
		return nil, err
	}
	b := &batch{}
	for _, d := range ans.Data {
		p := picture{b64: d.B64JSON}
		if d.RevisedPrompt != "" {
			p.note = "prompt as revised by the model: " + d.RevisedPrompt
		}
		b.images = append(b.images, p)
	}
	if ans.Usage != nil {
		b.usage, b.input, b.output = true, ans.Usage.InputTokens, ans.Usage.OutputTokens
	}
	return b, nil
}

func (t *Tool) base() string { return strings.TrimRight(t.opts.APIBase, "/") }

func bearer(key string) map[string]string {
	if key == "" {
		return nil
	}
	return map[string]string{"Authorization": "Bearer " + key}
}

// post sends body as JSON to endpoint with headers and decodes a 200
// answer into out; any other status is a *providers.Error with the
// vendor's message and no key.
func (t *Tool) post(ctx context.Context, endpoint string, body any, headers map[string]string, out any) error {
	b, err := json.Marshal(body)
	if err != nil {
		return fmt.Errorf("generate_image: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, bytes.NewReader(b))
	if err != nil {
		return fmt.Errorf("generate_image: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := t.opts.HTTPClient.Do(req)
	if err != nil {
		return fmt.Errorf("generate_image: %s", providers.Redact(err.Error(), t.opts.APIKey))
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswerSize))
	if err != nil {
		return fmt.Errorf("generate_image: read answer: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		pe := providers.HTTPError(t.opts.Provider, resp.StatusCode, resp.Header, raw, t.opts.APIKey)
		return fmt.Errorf("generate_image: %w", pe)
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("generate_image: answer is not JSON: %w", err)
	}
	return nil
}

// aspectRatio maps a size to the aspect ratio Gemini and OpenRouter take
// instead ("" leaves it to the model).
func aspectRatio(size string) string {
	switch size {
	case "1024x1024", "512x512", "256x256":
		return "1:1"
	case "1536x1024":
		return "3:2"
	case "1024x1536":
		return "2:3"
	case "1792x1024":
		return "16:9"
	case "1024x1792":
		return "9:16"
	}
	return ""
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

// Call is one image request, as Options.Record is told it.
type Call struct {
	Provider, Model string
	Latency         time.Duration
	// Err is the request's failure; nil when it succeeded.
	Err error
	// Input and Output are the tokens the server reported (0 when none).
	Input, Output int64
	// CostUSD is the call's price; nil when the model's price is unknown.
	CostUSD *float64
}

func (t *Tool) record(ctx context.Context, c Call) {
	if t.opts.Record != nil {
		t.opts.Record(ctx, c)
	}
}
