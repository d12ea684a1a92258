package browser

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/nanobot-go/nanobot/tools"
)

// Actions the tool takes, in the order the description lists them.
var Actions = []string{"navigate", "snapshot", "click", "type", "scroll", "screenshot", "pdf", "back", "close"}

// Tool is the `browser` tool of one agent. Tools of several agents share
// one Browser; scope keeps their sessions' tabs apart.
type Tool struct {
	b        *Browser
	scope    string
	approval Approval
}

var _ tools.Tool = (*Tool)(nil)

// Tool returns the browser tool for an agent; scope (its workspace, say)
// keeps its tabs apart from other agents' with the same session keys.
func (b *Browser) Tool(scope string) *Tool { return &Tool{b: b, scope: scope} }

func (t *Tool) Name() string { return "browser" }

func (t *Tool) Description() string {
	return "Use a real web browser (headless Chromium) for pages that need JavaScript, clicks or forms; prefer web_fetch to just read a page. " +
		"Actions: navigate (url) opens a page; snapshot lists the page's text, headings and interactive elements, each with a reference like e12; " +
		"click (ref) and type (ref, text, submit to press Enter) act on an element from the latest snapshot; scroll (direction up/down, or ref); " +
		"screenshot returns a picture of the page and saves it (send it with the message tool's files); pdf saves the page as a PDF; back; close ends the tab. " +
		"Take a new snapshot after the page changes: references belong to the snapshot that gave them. One tab per conversation; private and local network addresses are refused."
}

func (t *Tool) Parameters() map[string]any {
	return map[string]any{
		"type": "object",
		"properties": map[string]any{
			"action":    map[string]any{"type": "string", "enum": Actions, "description": "what to do"},
			"url":       map[string]any{"type": "string", "description": "navigate: the http(s) URL to open"},
			"ref":       map[string]any{"type": "string", "description": "click, type, scroll: an element reference from the latest snapshot, like e12"},
			"text":      map[string]any{"type": "string", "description": "type: the text to enter (replaces the field's text); for a drop-down, the option to choose"},
			"submit":    map[string]any{"type": "boolean", "description": "type: press Enter afterwards"},
			"direction": map[string]any{"type": "string", "enum": []string{"up", "down", "top", "bottom"}, "description": "scroll: which way, one screen (or to the top or bottom); without ref"},
			"full_page": map[string]any{"type": "boolean", "description": "screenshot: the whole page instead of the visible part"},
		},
		"required": []string{"action"},
	}
}

// Execute runs one action on the session's tab.
func (t *Tool) Execute(ctx context.Context, args map[string]any) (tools.Result, error) {
	a := tools.Args(args)
	action := a.String("action")
	key := t.scope + "\x00" + sessionOf(ctx)
	if action == "close" {
		if t.b.closeTab(key) {
			return tools.Result{Content: "Closed the browser tab."}, nil
		}
		return tools.Result{Content: "No browser tab was open."}, nil
	}
	if err := validate(action, a); err != nil {
		return tools.Result{}, err
	}
	if err := t.approve(ctx, action, a); err != nil {
		return tools.Result{}, err
	}
	tab, err := t.b.acquire(key)
	if err != nil {
		return tools.Result{}, err
	}
	defer t.b.release(tab)
	tab.run.Lock()
	defer tab.run.Unlock()
	var res tools.Result
	err = t.b.within(ctx, tab, func(tctx context.Context) error {
		var err error
		res, err = t.b.do(ctx, tctx, tab, action, a)
		return err
	})
	if err != nil {
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			return tools.Result{}, err
		}
		return tools.Result{}, fmt.Errorf("browser %s: %w", action, err)
	}
	return res, nil
}

// sessionOf is the conversation the call belongs to; calls outside one
// (a test, the CLI) share a tab.
func sessionOf(ctx context.Context) string {
	if cc, ok := tools.CallContextFrom(ctx); ok && cc.SessionKey != "" {
		return cc.SessionKey
	}
	return "default"
}

// validate checks the arguments an action needs, before a tab is opened.
func validate(action string, a tools.Args) error {
	need := func(key, what string) error {
		if strings.TrimSpace(a.String(key)) == "" {
			return fmt.Errorf("browser %s needs %s", action, what)
		}
		return nil
	}
	switch action {
	case "navigate":
		return need("url", "a url")
	case "click":
		return checkRef(action, a.String("ref"))
	case "type":
		if err := checkRef(action, a.String("ref")); err != nil {
			return err
		}
		if !a.Has("text") {
			return errors.New("browser type needs text (\"\" clears the field)")
		}
	case "scroll":
		if a.String("ref") != "" {
			return checkRef(action, a.String("ref"))
		}
		if a.String("direction") == "" {
			return errors.New("browser scroll needs a direction (up, down, top, bottom) or a ref")
		}
	case "snapshot", "screenshot", "pdf", "back":
	default:
		return fmt.Errorf("unknown browser action %q: want one of %s", action, strings.Join(Actions, ", "))
	}
	return nil
}

// checkRef accepts a reference as snapshots write it (e12, or [e12]).
func checkRef(action, ref string) error {
	r := normRef(ref)
	if len(r) < 2 || len(r) > 8 || r[0] != 'e' || strings.Trim(r[1:], "0123456789") != "" {
		return fmt.Errorf("browser %s needs ref, an element reference from the latest snapshot like e12 (got %q)", action, ref)
	}
	return nil
}

func normRef(ref string) string { return strings.Trim(strings.TrimSpace(ref), "[]") }
