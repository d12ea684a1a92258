package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/nanobot-go/nanobot/internal/owner"
	"github.com/nanobot-go/nanobot/tools/approval"
)

// newApprovalsCmd answers approval requests from the terminal, through
// the running gateway's API with the instance's access token (the same
// as the workbench's buttons): for a server reached over SSH.
func newApprovalsCmd(a *app) *cobra.Command {
	list := command("list", "List the commands waiting for your approval", func(cmd *cobra.Command) error {
		var out struct {
			Enabled bool               `json:"enabled"`
			Pending []approval.Request `json:"pending"`
		}
		if err := a.gatewayAPI(http.MethodGet, "/api/approvals", nil, &out); err != nil {
			return err
		}
		w := cmd.OutOrStdout()
		switch {
		case !out.Enabled:
			fmt.Fprintln(w, "approval is off (tools.exec.approval, tools.browser.approval)")
		case len(out.Pending) == 0:
			fmt.Fprintln(w, "nothing waits for approval")
		}
		for _, r := range out.Pending {
			fmt.Fprintf(w, "%s  %s  %s  (%s; %s; answer within %s)\n", r.ID, r.Tool, r.Action, strings.Join(r.Reasons, ", "), r.SessionKey, time.Until(r.Expires).Round(time.Second))
		}
		return nil
	})
	var always bool
	allow := commandArg("allow ID", "Let a waiting command run (--always: from now on too)", func(cmd *cobra.Command, id string) error {
		d := "once"
		if always {
			d = "always"
		}
		return a.answerApproval(cmd.OutOrStdout(), id, d)
	})
	allow.Flags().BoolVar(&always, "always", false, "remember the exact command in tools.exec.approvedCommands")
	deny := commandArg("deny ID", "Refuse a waiting command", func(cmd *cobra.Command, id string) error {
		return a.answerApproval(cmd.OutOrStdout(), id, "deny")
	})
	return group("approvals", "Answer the agent's requests to run risky commands (docs/approvals.md)", list, allow, deny)
}

func (a *app) answerApproval(w io.Writer, id, decision string) error {
	var out struct {
		Request  approval.Request `json:"request"`
		Decision string           `json:"decision"`
		Warning  string           `json:"warning"`
	}
	if err := a.gatewayAPI(http.MethodPost, "/api/approvals/"+id, map[string]string{"decision": decision}, &out); err != nil {
		return err
	}
	fmt.Fprintf(w, "%s: %s\n", out.Decision, out.Request.Action)
	if out.Warning != "" {
		fmt.Fprintln(w, "warning:", out.Warning)
	}
	return nil
}

// gatewayAPI calls the running gateway's workbench API with the
// instance's access token and decodes the JSON answer into out.
func (a *app) gatewayAPI(method, path string, body, out any) error {
	key, err := owner.Load(owner.Path(a.loaded.Paths.State))
	if err != nil {
		return fmt.Errorf("the instance's access token: %w (start the gateway once first)", err)
	}
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	g := a.loaded.Config.Gateway
	host := g.Host
	if host == "" || host == "0.0.0.0" || host == "::" {
		host = "127.0.0.1"
	}
	req, err := http.NewRequest(method, "http://"+net.JoinHostPort(host, fmt.Sprint(g.Port))+path, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+key.Token())
	req.Header.Set("Content-Type", "application/json")
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		return fmt.Errorf("the gateway is not running or not reachable: %w", err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode/100 != 2 {
		var e struct {
			Error string `json:"error"`
		}
		_ = json.Unmarshal(data, &e)
		if e.Error == "" {
			e.Error = strings.TrimSpace(string(data))
		}
		return fmt.Errorf("the gateway answered %d: %s", resp.StatusCode, e.Error)
	}
	return json.Unmarshal(data, out)
}
