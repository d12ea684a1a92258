package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html"
	"image/png"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/channels/telegram/telegramtest"
	"github.com/nanobot-go/nanobot/internal/testproc"
	"github.com/nanobot-go/nanobot/internal/waitfor"
	"github.com/nanobot-go/nanobot/providers/providertest"
	"github.com/nanobot-go/nanobot/tools/browser"
)

// TestBrowserThroughTelegram runs the gateway binary with the fake
// Telegram and a scripted model that browses like a model does, reading
// each tool result for its next step: navigate to a page the test serves,
// snapshot, click the button the snapshot names, type into the search box
// and press Enter, screenshot, and send the screenshot to the chat with
// the message tool. The photo must arrive; the page must have seen the
// click and the search; Chromium must be gone once the gateway stops.
func TestBrowserThroughTelegram(t *testing.T) {
	if _, err := browser.Find(""); err != nil {
		testproc.Missing(t, "no chromium on this machine (.ci/run installs it)")
	}
	searched := make(chan string, 1)
	site := serveOn(t, "127.0.0.2", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/search" {
			select {
			case searched <- r.URL.Query().Get("q"):
			default:
			}
			fmt.Fprintf(w, `<title>Results</title><h1>Results for %s</h1>`, html.EscapeString(r.URL.Query().Get("q")))
			return
		}
		fmt.Fprint(w, `<title>Bakery</title><h1>The bakery</h1>
<button onclick="this.textContent = 'Ordered!'">Order bread</button>
<form action="/search"><input name="q" aria-label="Search"></form>`)
	}))

	llm := providertest.New(t)
	llm.Handle(browsingModel(site))
	tg := telegramtest.New(t)
	dir := t.TempDir()
	cfg := scriptedConfig(t, dir, llm, fmt.Sprintf(`"telegram": {"enabled": true, "token": %q, "apiBase": %q, "allowFrom": ["4242|ann"]}`,
		telegramtest.Token, tg.URL), `"ssrfAllowlist": ["127.0.0.2/32"]`, `"enabled": false`)
	gw := launchGateway(t, cfg)

	ann := telegramtest.User{ID: 4242, Username: "ann", FirstName: "Ann"}
	tg.Send(telegramtest.Msg{From: ann, Chat: telegramtest.Chat{ID: 4242, Type: "private"}, Text: "order bread and search for rye, then show me"})
	var photo telegramtest.Sent
	waitfor.Within(t, "the screenshot in the chat", 120*time.Second, func() bool {
		for _, s := range tg.Sent() {
			if s.Method == "sendPhoto" && s.Upload != nil {
				photo = s
				return true
			}
		}
		return false
	})
	if _, err := png.Decode(bytes.NewReader(photo.Upload.Data)); err != nil {
		t.Errorf("the photo sent is not a PNG: %v", err)
	}
	select {
	case q := <-searched:
		if q != "rye" {
			t.Errorf("the page was searched for %q, want rye", q)
		}
	default:
		t.Error("the search form was never sent")
	}
	waitfor.Within(t, "the final answer", 60*time.Second, func() bool {
		for _, s := range tg.Sent() {
			if strings.Contains(s.Visible, "all done") {
				return true
			}
		}
		return false
	})
	// The model saw the click in the page and the page wrapped as external.
	all := allMessages(llm.Requests())
	for _, want := range []string{"Ordered!", "external_content", "Results for rye"} {
		if !strings.Contains(all, want) {
			t.Errorf("the model never saw %q in a tool result", want)
		}
	}

	profile := filepath.Join(dir, "workspace", ".browser-profile")
	if _, err := os.Stat(profile); err != nil {
		t.Errorf("no browser profile in the workspace: %v", err)
	}
	gw.stop()
	if runtime.GOOS == "linux" {
		if pids := processesWith("--user-data-dir=" + profile); len(pids) > 0 {
			t.Errorf("Chromium still runs after the gateway stopped: %v", pids)
		}
	}
}

// browsingModel answers each request by the number of tool results so
// far, reading the latest ones as a model would.
func browsingModel(site string) func(providertest.Request) providertest.Reply {
	call := func(name, args string) providertest.Reply {
		return providertest.Reply{ToolCalls: []providertest.ToolCall{{ID: fmt.Sprintf("c%d", time.Now().UnixNano()), Name: name, Arguments: args}}}
	}
	return func(r providertest.Request) providertest.Reply {
		all := allMessages([]providertest.Request{r})
		results := 0
		for _, m := range r.Messages() {
			if m["role"] == "tool" {
				results++
			}
		}
		ref := func(pattern string) string {
			m := regexp.MustCompile(`\[(e\d+) ` + pattern).FindStringSubmatch(all)
			if m == nil {
				return "e0"
			}
			return m[1]
		}
		switch results {
		case 0:
			return call("browser", fmt.Sprintf(`{"action":"navigate","url":%q}`, site+"/"))
		case 1:
			return call("browser", `{"action":"snapshot"}`)
		case 2:
			return call("browser", fmt.Sprintf(`{"action":"click","ref":%q}`, ref(`button \\"Order bread\\"`)))
		case 3:
			return call("browser", `{"action":"snapshot"}`)
		case 4:
			return call("browser", fmt.Sprintf(`{"action":"type","ref":%q,"text":"rye","submit":true}`, ref(`textbox \\"Search\\"`)))
		case 5:
			return call("browser", `{"action":"snapshot"}`)
		case 6:
			return call("browser", `{"action":"screenshot"}`)
		case 7:
			m := regexp.MustCompile(`saved to (\S+?\.png)`).FindStringSubmatch(all)
			if m == nil {
				return providertest.Reply{Text: "no screenshot path"}
			}
			return call("message", fmt.Sprintf(`{"content":"the page","files":[%q]}`, m[1]))
		}
		return providertest.Reply{Text: "all done"}
	}
}

// allMessages is the requests' messages as one JSON text.
func allMessages(reqs []providertest.Request) string {
	var sb strings.Builder
	for _, r := range reqs {
		b, _ := json.Marshal(r.Messages())
		sb.Write(b)
	}
	return sb.String()
}

// serveOn serves h on host (an address of the loopback) and returns the
// base URL.
func serveOn(t *testing.T, host string, h http.Handler) string {
	t.Helper()
	ln, err := net.Listen("tcp", host+":0")
	if err != nil {
		t.Skipf("cannot listen on %s: %v", host, err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return "http://" + ln.Addr().String()
}

// processesWith lists the processes whose command line contains s.
func processesWith(s string) []string {
	var out []string
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		cmdline, err := os.ReadFile(filepath.Join(d, "cmdline"))
		if err == nil && bytes.Contains(cmdline, []byte(s)) {
			out = append(out, filepath.Base(d))
		}
	}
	return out
}
