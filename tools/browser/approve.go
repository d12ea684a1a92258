package browser

import (
	"context"
	"errors"
	"fmt"

	"github.com/nanobot-go/nanobot/tools"
	"github.com/nanobot-go/nanobot/tools/approval"
)

// Approval asks the owner before the browser acts on a site
// (tools.browser.approval): "risky" asks before a form is submitted (type
// with submit), "always" before every action that changes or leaves the
// page (navigate, click, type, pdf). Reading it (snapshot, screenshot,
// scroll, back, close) is never asked.
type Approval struct {
	Mode   approval.Mode
	Broker *approval.Broker
}

// WithApproval sets the tool's approval and returns it.
func (t *Tool) WithApproval(ap Approval) *Tool {
	t.approval = ap
	return t
}

// asks reports whether action needs the owner under mode, and why.
func asks(mode approval.Mode, action string, a tools.Args) (bool, []string) {
	switch {
	case mode == approval.Risky && action == "type" && a.Bool("submit", false):
		return true, []string{"submits a form"}
	case mode == approval.Always && (action == "navigate" || action == "click" || action == "type" || action == "pdf"):
		return true, nil
	}
	return false, nil
}

// describe is the action as the owner reads it.
func describe(action string, a tools.Args) string {
	switch action {
	case "navigate":
		return "browser: open " + a.String("url")
	case "click":
		return "browser: click " + a.String("ref") + " (from the latest snapshot)"
	case "type":
		s := fmt.Sprintf("browser: type %q into %s", a.String("text"), a.String("ref"))
		if a.Bool("submit", false) {
			s += " and press Enter"
		}
		return s
	}
	return "browser: " + action
}

// approve returns nil when the action may go ahead.
func (t *Tool) approve(ctx context.Context, action string, a tools.Args) error {
	ap := t.approval
	ask, reasons := asks(ap.Mode, action, a)
	if !ask {
		return nil
	}
	if ap.Broker == nil {
		return errors.New("not done: this needs the owner's approval (tools.browser.approval) and there is nobody to ask here")
	}
	cc, _ := tools.CallContextFrom(ctx)
	d, err := ap.Broker.Ask(ctx, approval.Request{Tool: "browser", Action: describe(action, a), Reasons: reasons,
		Channel: cc.Channel, ChatID: cc.ChatID, SessionKey: cc.SessionKey, Sender: cc.SenderID})
	switch {
	case d != approval.Deny:
		return nil
	case ctx.Err() != nil:
		return fmt.Errorf("cancelled while waiting for the owner's approval: %w", ctx.Err())
	case err != nil:
		return fmt.Errorf("not done: it needs the owner's approval and got %v, which counts as a no; tell the user what you wanted to do", err)
	}
	return errors.New("not done: the owner said no. Do not try it another way; ask the user what to do instead")
}
