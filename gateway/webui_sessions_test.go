package gateway

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/coder/websocket"
	"github.com/coder/websocket/wsjson"

	"github.com/nanobot-go/nanobot/channels/web"
	"github.com/nanobot-go/nanobot/providers"
)

// memoryLLM answers memory consolidation requests with a save_memory call
// (and records what they carried); everything else it echoes.
type memoryLLM struct {
	echoLLM
	mu            sync.Mutex
	consolidation []string // the prompt of each consolidation request
}

func (l *memoryLLM) Chat(ctx context.Context, req providers.ChatRequest) (*providers.LLMResponse, error) {
	if req.ToolChoice != "save_memory" {
		return l.echoLLM.Chat(ctx, req)
	}
	l.mu.Lock()
	l.consolidation = append(l.consolidation, req.Messages[len(req.Messages)-1].Text())
	l.mu.Unlock()
	return &providers.LLMResponse{FinishReason: "tool_calls", ToolCalls: []providers.ToolCallRequest{{
		ID: "call_mem", Name: "save_memory",
		Arguments: map[string]any{"history_entry": "The user asked for a Go add function.", "memory_update": "# Facts\n- the user writes Go\n"},
	}}}, nil
}

func (l *memoryLLM) prompts() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.consolidation...)
}

// workbenchCall makes an API call as a script of the owner's: the access
// token as a bearer key (a browser's cookie and CSRF token are tested in
// gateway/webui).
func workbenchCall(t *testing.T, r *running, method, path string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(method, "http://"+r.addr+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	r.authed(t, req)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("%s %s: %d %q is not JSON", method, path, resp.StatusCode, b)
	}
	return resp.StatusCode, out
}

// TestWorkbenchDeleteConsolidatesFirst: deleting a conversation in the
// workbench takes the /new path: what it said is folded into memory (the
// model is asked, MEMORY.md changes), then the session is archived.
func TestWorkbenchDeleteConsolidatesFirst(t *testing.T) {
	llm := &memoryLLM{}
	var ws string
	r := startGatewayOpts(t, testConfig(nil), llm, func(o *Options) {
		o.Channels = webOnly()
		ws = o.Paths.Workspace
		seedTelegram(t, o.Paths.Sessions)
	})
	if code, _ := workbenchCall(t, r, http.MethodGet, "/api/sessions/telegram:4242"); code != http.StatusOK {
		t.Fatalf("the seeded conversation: HTTP %d", code)
	}

	code, body := workbenchCall(t, r, http.MethodDelete, "/api/sessions/telegram:4242")
	if code != http.StatusOK || body["archived"] != "telegram:4242" {
		t.Fatalf("delete: HTTP %d %v", code, body)
	}

	prompts := llm.prompts()
	if len(prompts) != 1 || !strings.Contains(prompts[0], "adds two numbers") {
		t.Fatalf("consolidation requests = %q, want one carrying the conversation", prompts)
	}
	mem, err := os.ReadFile(filepath.Join(ws, "memory", "MEMORY.md"))
	if err != nil || !strings.Contains(string(mem), "the user writes Go") {
		t.Fatalf("MEMORY.md = %q (%v), want the consolidated fact", mem, err)
	}
	if code, _ := workbenchCall(t, r, http.MethodGet, "/api/sessions/telegram:4242"); code != http.StatusNotFound {
		t.Errorf("the deleted conversation: HTTP %d, want 404 (archived)", code)
	}
	_, list := workbenchCall(t, r, http.MethodGet, "/api/sessions")
	if n := len(list["sessions"].([]any)); n != 0 {
		t.Errorf("%d conversations listed after the delete, want 0", n)
	}
}

// webTab is a Go client of the web chat's WebSocket on a loopback bind.
type webTab struct {
	t  *testing.T
	ws *websocket.Conn
}

func openTab(t *testing.T, r *running, chat string, temporary bool) *webTab {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, "ws://"+r.addr+"/ws", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.CloseNow() })
	tab := &webTab{t: t, ws: ws}
	if err := wsjson.Write(ctx, ws, web.Frame{Type: "auth", Chat: chat, Token: r.token(t), Temporary: temporary}); err != nil {
		t.Fatal(err)
	}
	if f := tab.until(func(f web.Frame) bool { return true }); f.Type != "hello" {
		t.Fatalf("auth answered %+v", f)
	}
	return tab
}

// say sends text and returns the first final frame that contains want.
func (tab *webTab) say(text, want string) web.Frame {
	tab.t.Helper()
	if err := wsjson.Write(context.Background(), tab.ws, web.Frame{Type: "message", Text: text}); err != nil {
		tab.t.Fatal(err)
	}
	return tab.until(func(f web.Frame) bool { return f.Final && strings.Contains(f.Text, want) })
}

func (tab *webTab) until(ok func(web.Frame) bool) web.Frame {
	tab.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for {
		var f web.Frame
		if err := wsjson.Read(ctx, tab.ws, &f); err != nil {
			tab.t.Fatalf("reading the chat: %v", err)
		}
		if ok(f) {
			return f
		}
	}
}

// TestTemporaryChatStoresNothing: a temporary web chat is answered as
// usual but leaves no session behind; an ordinary one is stored.
func TestTemporaryChatStoresNothing(t *testing.T) {
	var sessions string
	r := startGatewayOpts(t, testConfig(nil), &echoLLM{}, func(o *Options) {
		o.Channels = webOnly()
		sessions = o.Paths.Sessions
	})

	temp := openTab(t, r, "temporarytab0001", true)
	temp.say("hello from a temporary chat", "echo: hello from a temporary chat")
	temp.say("and once more", "echo: and once more")
	// A session's messages run in order: once /help is answered, both
	// turns before it are over (saved, had they been stored).
	temp.say("/help", "Commands:")

	stored := openTab(t, r, "storedtab0000001", false)
	stored.say("hello from a stored chat", "echo: hello from a stored chat")
	stored.say("/help", "Commands:")

	code, body := workbenchCall(t, r, http.MethodGet, "/api/sessions/web:storedtab0000001")
	if code != http.StatusOK || len(body["messages"].([]any)) != 2 {
		t.Fatalf("the stored chat: HTTP %d %v, want its two messages", code, body)
	}
	if code, body := workbenchCall(t, r, http.MethodGet, "/api/sessions/web:temporarytab0001"); code != http.StatusNotFound {
		t.Errorf("the temporary chat: HTTP %d %v, want 404 (never stored)", code, body)
	}
	if _, ok := natsURL.Load(t); !ok {
		files, _ := filepath.Glob(filepath.Join(sessions, "*"))
		for _, f := range files {
			if strings.Contains(f, "temporarytab0001") {
				t.Errorf("the temporary chat left %s", f)
			}
		}
		if len(files) == 0 {
			t.Error("no session files at all: the stored chat's is missing")
		}
	}
}

// TestWorkbenchDeleteInBrowser: the Delete button (two clicks) takes the
// same path: the conversation is consolidated into memory, then leaves the
// sidebar.
func TestWorkbenchDeleteInBrowser(t *testing.T) {
	ctx := browser(t)
	llm := &memoryLLM{}
	var ws string
	r := startGatewayOpts(t, testConfig(nil), llm, func(o *Options) {
		o.Channels = webOnly()
		ws = o.Paths.Workspace
		seedTelegram(t, o.Paths.Sessions)
	})
	signIn(t, ctx, r)
	err := chromedp.Do(ctx,
		chromedp.Navigate("http://"+r.addr+"/"),
		until("the telegram conversation", `!!document.querySelector('.session[data-key="telegram:4242"]')`),
		click(`.session[data-key="telegram:4242"]`),
		until("its history", `!!document.querySelector("#history pre.hl") && !document.getElementById("delete").hidden`),
		click("#delete"),
		until("the confirmation", `document.getElementById("delete").textContent === "Confirm delete"`),
		click("#delete"),
		until("the sidebar empty", `document.querySelectorAll(".session").length === 0 && !document.getElementById("sessions-empty").hidden`),
	)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(llm.prompts()); n != 1 {
		t.Errorf("%d consolidation requests, want 1", n)
	}
	mem, err := os.ReadFile(filepath.Join(ws, "memory", "MEMORY.md"))
	if err != nil || !strings.Contains(string(mem), "the user writes Go") {
		t.Errorf("MEMORY.md = %q (%v), want the consolidated fact", mem, err)
	}
}
