package gateway

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"mime/multipart"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"

	"github.com/nanobot-go/nanobot/configs"
	"github.com/nanobot-go/nanobot/providers"
)

func respText(text string) responses.ResponseNewParams {
	return responses.ResponseNewParams{Input: responses.ResponseNewParamsInputUnion{OfString: openai.String(text)}}
}

// historyOf renders what the provider saw between the system prompt and
// the new user message.
func historyOf(req providers.ChatRequest) string {
	var seen []string
	for _, m := range req.Messages[1 : len(req.Messages)-1] {
		seen = append(seen, m.Role+": "+m.Text())
	}
	return strings.Join(seen, "|")
}

func TestAPIResponsesCreate(t *testing.T) {
	llm := newAPILLM()
	r := startGateway(t, apiConfig(), llm)
	params := respText("hello there")
	params.Model = "test-model"
	params.Instructions = openai.String("answer in English")
	resp, err := apiClient(t, r).Responses.New(t.Context(), params)
	if err != nil {
		t.Fatal(err)
	}
	if got := resp.OutputText(); got != "echo: hello there" {
		t.Errorf("output text %q, want %q", got, "echo: hello there")
	}
	if !strings.HasPrefix(resp.ID, "resp_") || resp.Object != "response" || resp.Status != "completed" || resp.Model != "test-model" {
		t.Errorf("response %s object=%s status=%s model=%s, want resp_… response completed test-model", resp.ID, resp.Object, resp.Status, resp.Model)
	}
	if len(resp.Output) != 1 || resp.Output[0].Type != "message" || resp.Output[0].Role != "assistant" {
		t.Errorf("output %+v, want one assistant message", resp.Output)
	}
	if u := resp.Usage; u.InputTokens != 10 || u.OutputTokens != 3 || u.TotalTokens != 13 {
		t.Errorf("usage %+v, want 10+3=13", u)
	}
	// The instructions lead the turn's message; the agent's system prompt
	// stays as it is.
	last := llm.reqs()[0].Messages
	if got := last[len(last)-1].Text(); !strings.Contains(got, "answer in English") {
		t.Errorf("the provider's user message %q lacks the instructions", got)
	}
}

func TestAPIResponsesStreaming(t *testing.T) {
	llm := newAPILLM()
	llm.pause = 15 * time.Millisecond
	r := startGateway(t, apiConfig(), llm)
	st := apiClient(t, r).Responses.NewStreaming(t.Context(), respText("one two three four five"))
	var types []string
	var deltas strings.Builder
	var final responses.Response
	var seq []int64
	for st.Next() {
		ev := st.Current()
		types = append(types, ev.Type)
		seq = append(seq, ev.SequenceNumber)
		switch ev.Type {
		case "response.output_text.delta":
			deltas.WriteString(ev.Delta)
		case "response.completed":
			final = ev.Response
		}
	}
	if err := st.Err(); err != nil {
		t.Fatal(err)
	}
	// The documented order: the deltas (collapsed here) between the
	// opening and closing events.
	var order []string
	ndelta := 0
	for _, ty := range types {
		if ty == "response.output_text.delta" {
			ndelta++
			if len(order) > 0 && order[len(order)-1] == ty {
				continue
			}
		}
		order = append(order, ty)
	}
	want := []string{"response.created", "response.in_progress", "response.output_item.added", "response.content_part.added",
		"response.output_text.delta", "response.output_text.done", "response.content_part.done", "response.output_item.done", "response.completed"}
	if !slices.Equal(order, want) {
		t.Errorf("events %q,\nwant %q", order, want)
	}
	if ndelta < 2 {
		t.Errorf("the text came in %d delta(s), want it streamed in several", ndelta)
	}
	for i, s := range seq {
		if s != int64(i) {
			t.Fatalf("sequence numbers %v, want 0, 1, 2, …", seq)
		}
	}
	if got := deltas.String(); got != "echo: one two three four five" {
		t.Errorf("deltas add up to %q", got)
	}
	if final.Status != "completed" || final.OutputText() != "echo: one two three four five" || final.Usage.TotalTokens != 13 {
		t.Errorf("completed response: status %s, text %q, usage %+v", final.Status, final.OutputText(), final.Usage)
	}
}

// A conversation continues through previous_response_id, also after the
// gateway restarts; unknown ids are 404.
func TestAPIResponsesContinuityAcrossRestart(t *testing.T) {
	cfg := apiConfig()
	dir := t.TempDir()
	llm := newAPILLM()
	inDir := func(o *Options) { o.Paths = configs.PathsFor(filepath.Join(dir, "config.json"), o.Config) }
	r := startGatewayOpts(t, cfg, llm, inDir)
	cl := apiClient(t, r)
	first, err := cl.Responses.New(t.Context(), respText("first"))
	if err != nil {
		t.Fatal(err)
	}
	params := respText("second")
	params.PreviousResponseID = openai.String(first.ID)
	second, err := cl.Responses.New(t.Context(), params)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := historyOf(llm.reqs()[1]), "user: first|assistant: echo: first"; got != want {
		t.Errorf("second turn's history %q, want %q", got, want)
	}
	if second.PreviousResponseID != first.ID {
		t.Errorf("previous_response_id %q, want %q", second.PreviousResponseID, first.ID)
	}

	r.cancel()
	err = <-r.done
	r.done <- err // for the cleanup
	if err != nil {
		t.Fatalf("gateway stop: %v", err)
	}
	llm2 := newAPILLM()
	r2 := startGatewayOpts(t, cfg, llm2, inDir)
	cl = apiClient(t, r2)
	params = respText("third")
	params.PreviousResponseID = openai.String(second.ID)
	if _, err := cl.Responses.New(t.Context(), params); err != nil {
		t.Fatalf("continuing after a restart: %v", err)
	}
	if got, want := historyOf(llm2.reqs()[0]), "user: first|assistant: echo: first|user: second|assistant: echo: second"; got != want {
		t.Errorf("after the restart the history is %q, want %q", got, want)
	}

	params.PreviousResponseID = openai.String("resp_" + strings.Repeat("ab", 12))
	_, err = cl.Responses.New(t.Context(), params)
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 404 || apiErr.Code != "previous_response_not_found" || apiErr.Param != "previous_response_id" {
		t.Errorf("unknown previous_response_id: %v, want 404 previous_response_not_found", err)
	}
	if info, err := os.Stat(filepath.Join(dir, "state", "api-responses.json")); err != nil || info.Mode().Perm() != 0o600 {
		t.Errorf("conversation record: %v, mode %v; want 0600", err, info)
	}
}

func TestAPIResponsesStoreFalse(t *testing.T) {
	cfg := apiConfig()
	llm := newAPILLM()
	r := startGateway(t, cfg, llm)
	cl := apiClient(t, r)
	params := responses.ResponseNewParams{
		Store: openai.Bool(false),
		Input: responses.ResponseNewParamsInputUnion{OfInputItemList: responses.ResponseInputParam{
			responses.ResponseInputItemParamOfMessage("my name is Ada", responses.EasyInputMessageRoleUser),
			responses.ResponseInputItemParamOfMessage("Hello Ada.", responses.EasyInputMessageRoleAssistant),
			responses.ResponseInputItemParamOfMessage("what is my name", responses.EasyInputMessageRoleUser),
		}},
	}
	resp, err := cl.Responses.New(t.Context(), params)
	if err != nil {
		t.Fatal(err)
	}
	if got := resp.OutputText(); got != "echo: what is my name" {
		t.Errorf("output %q", got)
	}
	if got, want := historyOf(llm.reqs()[0]), "user: my name is Ada|assistant: Hello Ada."; got != want {
		t.Errorf("history sent %q, want %q", got, want)
	}
	paths := configs.PathsFor(filepath.Join(r.dir, "config.json"), &cfg)
	if files := sessionFiles(t, paths.Sessions); len(files) != 0 {
		t.Errorf("store:false stored sessions %q", files)
	}
	next := respText("again")
	next.PreviousResponseID = openai.String(resp.ID)
	_, err = cl.Responses.New(t.Context(), next)
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 404 || apiErr.Code != "previous_response_not_found" {
		t.Errorf("continuing a store:false response: %v, want 404", err)
	}
	// A stored response starts from one message: the earlier turns of a
	// conversation sent whole would otherwise be lost.
	params.Store = openai.Bool(true)
	_, err = cl.Responses.New(t.Context(), params)
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 || apiErr.Param != "input" {
		t.Errorf("a stored response with earlier turns: %v, want 400 naming input", err)
	}
}

func TestAPINoProviderIs503(t *testing.T) {
	r := startGateway(t, apiConfig(), providers.Unconfigured{Reason: `resolve provider: no provider configured for model "m": set providers.anthropic.apiKey in the config file`})
	cl := apiClient(t, r)
	_, err := cl.Chat.Completions.New(t.Context(), openai.ChatCompletionNewParams{
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")},
	})
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 503 || apiErr.Type != "service_unavailable" || !strings.Contains(apiErr.Message, "apiKey") {
		t.Errorf("chat completion without a provider: %v, want 503 service_unavailable explaining the key", err)
	}
	_, err = cl.Responses.New(t.Context(), respText("hi"))
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 503 {
		t.Errorf("response without a provider: %v, want 503", err)
	}
	if _, err := cl.Models.List(t.Context()); err != nil {
		t.Errorf("models without a provider: %v", err)
	}
}

func TestAPIRateLimitPerKey(t *testing.T) {
	keyA, keyB := "sk-a-0123456789abcdef", "sk-b-0123456789abcdef"
	cfg := apiConfig()
	cfg.API.APIKeys = []string{keyA, keyB}
	cfg.API.RateLimit.RequestsPerMinute = 2
	r := startGateway(t, cfg, newAPILLM())
	post := func(key string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest("POST", "http://"+r.addr+"/v1/chat/completions", strings.NewReader(`{"messages":[{"role":"user","content":"hi"}]}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	for i := range 2 {
		if resp := post(keyA); resp.StatusCode != 200 {
			t.Fatalf("key A request %d: status %d, want 200", i+1, resp.StatusCode)
		}
	}
	resp := post(keyA)
	secs, _ := strconv.Atoi(resp.Header.Get("Retry-After"))
	if resp.StatusCode != 429 || secs < 1 || secs > 30 {
		t.Errorf("key A's third request: %d, Retry-After %q; want 429 with 1 to 30 s", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	// The SDK sees OpenAI's shape.
	_, err := apiClient(t, r, option.WithAPIKey(keyA)).Responses.New(t.Context(), respText("hi"))
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 429 || apiErr.Code != "rate_limit_exceeded" {
		t.Errorf("SDK over the limit: %v, want 429 rate_limit_exceeded", err)
	}
	if resp := post(keyB); resp.StatusCode != 200 {
		t.Errorf("key B after key A's limit: status %d, want 200 (each key has its own)", resp.StatusCode)
	}
	if _, err := apiClient(t, r, option.WithAPIKey(keyA)).Models.List(t.Context()); err != nil {
		t.Errorf("listing models is not limited: %v", err)
	}
}

func pngBytes(t *testing.T) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, 2, 2))
	img.Set(0, 0, color.RGBA{R: 255, A: 255})
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// imagesSeen returns the data URLs of the image parts of the provider's
// last user message.
func imagesSeen(req providers.ChatRequest) []string {
	var out []string
	for _, p := range req.Messages[len(req.Messages)-1].Parts {
		if p.Type == "image_url" && p.ImageURL != nil {
			out = append(out, p.ImageURL.URL)
		}
	}
	return out
}

func TestAPIImagesReachTheProvider(t *testing.T) {
	cfg := apiConfig()
	llm := newAPILLM()
	r := startGateway(t, cfg, llm)
	pic := pngBytes(t)
	wantURL := "data:image/png;base64," + base64.StdEncoding.EncodeToString(pic)
	paths := configs.PathsFor(filepath.Join(r.dir, "config.json"), &cfg)

	t.Run("multipart chat completion", func(t *testing.T) {
		var body bytes.Buffer
		mw := multipart.NewWriter(&body)
		_ = mw.WriteField("message", "what is this")
		_ = mw.WriteField("session_id", "pics")
		fw, _ := mw.CreateFormFile("files", "../../etc/red dot.png")
		_, _ = fw.Write(pic)
		_ = mw.Close()
		req, _ := http.NewRequest("POST", "http://"+r.addr+"/v1/chat/completions", &body)
		req.Header.Set("Content-Type", mw.FormDataContentType())
		resp, err := http.DefaultClient.Do(r.authed(t, req))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var got struct {
			Choices []struct{ Message struct{ Content string } }
		}
		if err := jsonDecode(resp, &got); err != nil || resp.StatusCode != 200 {
			t.Fatalf("status %d: %v", resp.StatusCode, err)
		}
		if len(got.Choices) != 1 || got.Choices[0].Message.Content != "echo: what is this" {
			t.Errorf("answer %+v", got.Choices)
		}
		reqs := llm.reqs()
		if imgs := imagesSeen(reqs[len(reqs)-1]); len(imgs) != 1 || imgs[0] != wantURL {
			t.Errorf("the provider saw %d image(s), want the uploaded PNG", len(imgs))
		}
		entries, err := os.ReadDir(filepath.Join(paths.Media, "inbound"))
		if err != nil || len(entries) != 1 {
			t.Fatalf("media/inbound: %v, %d files; want the upload", err, len(entries))
		}
		info, _ := entries[0].Info()
		if info.Mode().Perm() != 0o600 || strings.Contains(entries[0].Name(), "..") || strings.Contains(entries[0].Name(), "/") {
			t.Errorf("saved as %q mode %v, want a harmless name with mode 0600", entries[0].Name(), info.Mode().Perm())
		}
	})

	t.Run("input_image in a response", func(t *testing.T) {
		img := responses.ResponseInputContentParamOfInputImage(responses.ResponseInputImageDetailAuto)
		img.OfInputImage.ImageURL = openai.String(wantURL)
		_, err := apiClient(t, r).Responses.New(t.Context(), responses.ResponseNewParams{
			Input: responses.ResponseNewParamsInputUnion{OfInputItemList: responses.ResponseInputParam{
				responses.ResponseInputItemParamOfMessage(responses.ResponseInputMessageContentListParam{
					{OfInputText: &responses.ResponseInputTextParam{Text: "and this?"}}, img,
				}, responses.EasyInputMessageRoleUser),
			}},
		})
		if err != nil {
			t.Fatal(err)
		}
		reqs := llm.reqs()
		if imgs := imagesSeen(reqs[len(reqs)-1]); len(imgs) != 1 || imgs[0] != wantURL {
			t.Errorf("the provider saw %d image(s), want the input_image", len(imgs))
		}
	})

	t.Run("image_url in a chat completion", func(t *testing.T) {
		_, err := apiClient(t, r).Chat.Completions.New(t.Context(), openai.ChatCompletionNewParams{
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage([]openai.ChatCompletionContentPartUnionParam{
				openai.TextContentPart("look"), openai.ImageContentPart(openai.ChatCompletionContentPartImageImageURLParam{URL: wantURL}),
			})},
		})
		if err != nil {
			t.Fatal(err)
		}
		reqs := llm.reqs()
		if imgs := imagesSeen(reqs[len(reqs)-1]); len(imgs) != 1 || imgs[0] != wantURL {
			t.Errorf("the provider saw %d image(s), want the image_url", len(imgs))
		}
	})
}

func TestAPIUploadLimits(t *testing.T) {
	cfg := apiConfig()
	cfg.API.MaxUploadBytes = 4096
	r := startGateway(t, cfg, newAPILLM())
	send := func(path string, header [2]string, files ...[]byte) (int, string) {
		var body bytes.Buffer
		mw := multipart.NewWriter(&body)
		_ = mw.WriteField("message", "hi")
		for i, f := range files {
			fw, _ := mw.CreateFormFile("files", fmt.Sprintf("f%d.bin", i))
			_, _ = fw.Write(f)
		}
		_ = mw.Close()
		req, _ := http.NewRequest("POST", "http://"+r.addr+path, &body)
		req.Header.Set("Content-Type", mw.FormDataContentType())
		if header[0] != "" {
			req.Header.Set(header[0], header[1])
		}
		resp, err := http.DefaultClient.Do(r.authed(t, req))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := send("/v1/responses", [2]string{}, bytes.Repeat([]byte("x"), 8192)); code != 413 || !strings.Contains(body, "api.maxUploadBytes") {
		t.Errorf("oversized upload: %d %s, want 413 naming api.maxUploadBytes", code, body)
	}
	if code, body := send("/v1/chat/completions", [2]string{"Sec-Fetch-Mode", "navigate"}, []byte("x")); code != 400 || !strings.Contains(body, "Sec-Fetch-Mode") {
		t.Errorf("a browser form post: %d %s, want 400", code, body)
	}
	if code, body := send("/v1/responses", [2]string{}, []byte("small")); code != 200 || !strings.Contains(body, "f0.bin (application/octet-stream)") {
		t.Errorf("a small upload: %d %s, want 200 with the file noted for the agent", code, body)
	}
}
