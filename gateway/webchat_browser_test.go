package gateway

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/nanobot-go/nanobot/internal/testproc"
)

// chromium returns the browser binary, skipping the test when there is none
// (CI installs Debian's chromium, so there it must exist).
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	testproc.Missing(t, "no chromium on this machine (.ci/run installs it)")
	return ""
}

// TestWebChatInBrowser drives the real web chat page in headless Chromium:
// open the page, which asks for the access token (loopback is not an
// identity), paste it, send a message, see the streamed reply.
func TestWebChatInBrowser(t *testing.T) {
	bin := chromium(t)
	r := startGatewayOpts(t, testConfig(nil), &echoLLM{}, func(o *Options) { o.Channels = webOnly() })

	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(bin),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(900, 640),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelAlloc()
	ctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	ctx, cancelT := context.WithTimeout(ctx, 60*time.Second)
	defer cancelT()

	err := chromedp.Do(ctx,
		chromedp.Navigate("http://"+r.addr+"/chat"), // the chat page; / is the workbench
		chromedp.WaitVisible(chromedp.ID("input")),
		chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
			_, err := chromedp.Poll[bool](`document.getElementById("auth").open`, chromedp.WithPollingTimeout(20*time.Second))(ctx, t)
			return err
		}),
		chromedp.SendKeys(chromedp.ID("token"), r.token(t)),
		click("#authform button"),
		chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
			_, err := chromedp.Poll[bool](`document.getElementById("status").textContent === "connected"`, chromedp.WithPollingTimeout(20*time.Second))(ctx, t)
			return err
		}),
		chromedp.SendKeys(chromedp.ID("input"), "hello from the browser"),
		chromedp.Click(chromedp.ID("send")),
		chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
			_, err := chromedp.Poll[bool](`Array.from(document.querySelectorAll(".msg.bot")).some(e => e.textContent.includes("echo: hello from the browser"))`, chromedp.WithPollingTimeout(20*time.Second))(ctx, t)
			return err
		}),
	)
	if err != nil {
		t.Fatalf("browser: %v", err)
	}
	reply, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(".msg.bot")))
	if err != nil {
		t.Fatal(err)
	}
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(reply, "echo: hello from the browser") {
		t.Errorf("reply bubble %q", reply)
	}
	if out := os.Getenv("NANOBOT_SCREENSHOT"); out != "" {
		if err := os.WriteFile(out, png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
