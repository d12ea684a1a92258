package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"time"

	"github.com/nanobot-go/nanobot/configs"
	"github.com/nanobot-go/nanobot/tools/approval"
	"github.com/nanobot-go/nanobot/tools/browser"
	"github.com/nanobot-go/nanobot/tools/shell"
)

// newApprovals builds the broker tools ask the owner through, when
// tools.exec.approval or tools.browser.approval is on; nil when both are
// off. Only the
// gateway has one: the terminal REPL has no admin to ask, so there a
// command that needs approval is refused.
func (a *app) newApprovals() (*approval.Broker, error) {
	ec := a.loaded.Config.Tools.Exec
	execMode, _ := approval.ParseMode(ec.Approval) // validated at load
	browserMode, _ := approval.ParseMode(a.loaded.Config.Tools.Browser.Approval)
	if execMode == approval.Off && browserMode == approval.Off {
		return nil, nil
	}
	return approval.New(approval.Options{
		Timeout:  time.Duration(ec.ApprovalTimeout) * time.Second,
		Approved: map[string][]string{"exec": ec.ApprovedCommands},
		Remember: func(tool, pattern string) error { return a.rememberApproved(tool, pattern) },
		Audit:    approval.NewAudit(filepath.Join(a.loaded.Paths.State, "approvals.jsonl")),
		Redact:   a.redact.String,
		Logger:   a.log,
	})
}

// execApproval is the exec tool's approval settings.
func (a *app) execApproval() shell.Approval {
	mode, _ := approval.ParseMode(a.loaded.Config.Tools.Exec.Approval) // validated at load
	return shell.Approval{Mode: mode, Broker: a.approvals}
}

// browserApproval is the browser tool's approval settings.
func (a *app) browserApproval() browser.Approval {
	mode, _ := approval.ParseMode(a.loaded.Config.Tools.Browser.Approval) // validated at load
	return browser.Approval{Mode: mode, Broker: a.approvals}
}

// rememberApproved appends pattern to tools.exec.approvedCommands in the
// config file; only that list is rewritten (editConfig).
func (a *app) rememberApproved(tool, pattern string) error {
	if tool != "exec" {
		return fmt.Errorf("no config list for %s's approved patterns", tool)
	}
	const key = "tools.exec.approvedCommands"
	return a.editConfig(func(raw []byte) (string, any, error) {
		cur, found, err := configs.LookupJSON(raw, key)
		if err != nil {
			return "", nil, err
		}
		var list []any
		if found {
			_ = json.Unmarshal(cur, &list) // anything but a list is replaced by one
		}
		if slices.Contains(list, any(pattern)) {
			return "", nil, nil
		}
		return key, append(list, pattern), nil
	})
}
