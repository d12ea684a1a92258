package shell

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/nanobot-go/nanobot/tools"
	"github.com/nanobot-go/nanobot/tools/approval"
)

// Approval asks the owner before commands run (tools.exec.approval).
type Approval struct {
	// Mode: approval.Off (the zero value too), Risky or Always.
	Mode approval.Mode
	// Broker asks the owner. Nil with a mode other than Off refuses every
	// command that would need asking: there is nobody to ask (the
	// terminal REPL).
	Broker *approval.Broker
}

// off reports whether nothing is asked.
func (ap Approval) off() bool { return ap.Mode == "" || ap.Mode == approval.Off }

// approve returns nil when command may run: approval is off, the command
// is not risky (mode risky), a remembered pattern covers it, or the owner
// allowed it. Otherwise it returns the error the model reads.
func (t *Tool) approve(ctx context.Context, command string, cmds []simpleCmd, dir string) error {
	return t.opts.Approval.check(ctx, t.log, "exec", command, risks(command, cmds, dir, t.paths.Workspace()))
}

// check is approve for any action typed into a shell: an exec command, or
// what write_stdin types into a running session (tool names which);
// reasons are why the classifier calls it risky.
func (ap Approval) check(ctx context.Context, log *slog.Logger, tool, command string, reasons []string) error {
	switch {
	case ap.off():
		return nil
	case ap.Mode == approval.Risky:
		if len(reasons) == 0 {
			return nil
		}
	default:
		reasons = nil // asked whatever it is
	}
	if ap.Broker == nil {
		return tools.Refused("not run: this command needs the owner's approval (tools.exec.approval) and there is nobody to ask here")
	}
	cc, _ := tools.CallContextFrom(ctx)
	byPattern := ap.Broker.Approved(tool, command)
	d, err := ap.Broker.Ask(ctx, approval.Request{Tool: tool, Action: command, Reasons: reasons,
		Channel: cc.Channel, ChatID: cc.ChatID, SessionKey: cc.SessionKey, Sender: cc.SenderID})
	switch {
	case d != approval.Deny && byPattern:
		log.Info("command approved by a remembered pattern (tools.exec.approvedCommands)", "via", tool)
		return nil
	case d != approval.Deny:
		log.Info("command approved by the owner", "via", tool, "decision", d.String())
		return nil
	case ctx.Err() != nil:
		return fmt.Errorf("cancelled while waiting for the owner's approval: %w", ctx.Err())
	case err != nil:
		return tools.Refused("not run: it needs the owner's approval and got %v, which counts as a no. "+
			"Do not retry it in another form; tell the user what you wanted to run and why", err)
	}
	return tools.Refused("not run: the owner denied this command. Do not retry it or work around it; ask the user what to do instead")
}
