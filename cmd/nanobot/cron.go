package main

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/nanobot-go/nanobot/gateway"
	"github.com/nanobot-go/nanobot/gateway/cron"
	"github.com/nanobot-go/nanobot/tools"
	crontool "github.com/nanobot-go/nanobot/tools/cron"
)

func newCronCmd(a *app) *cobra.Command {
	return group("cron", "List, add and remove scheduled jobs", newCronListCmd(a), newCronAddCmd(a), newCronRemoveCmd(a))
}

// cronStore opens the jobs: jobs.json, or the cluster's NATS bucket in
// cluster mode (where the gateways keep them). done closes it.
func (a *app) cronStore(cmd *cobra.Command) (s *cron.Store, done func(), err error) {
	if cl := a.loaded.Config.Cluster; cl.Enabled() {
		ctx, cancel := context.WithTimeout(cmd.Context(), 15*time.Second)
		s, closeFn, err := gateway.CronStore(ctx, cl, filepath.Join(a.loaded.Paths.Cron, "jobs.json"), a.log)
		if err != nil {
			cancel()
			return nil, nil, err
		}
		return s, func() { closeFn(); cancel() }, nil
	}
	return cron.NewStore(filepath.Join(a.loaded.Paths.Cron, "jobs.json")), func() {}, nil
}

func newCronListCmd(a *app) *cobra.Command {
	return command("list", "List all jobs", func(cmd *cobra.Command) error {
		s, done, err := a.cronStore(cmd)
		if err != nil {
			return err
		}
		defer done()
		list, err := s.Jobs(cmd.Context())
		if err != nil {
			return err
		}
		if len(list) == 0 {
			fmt.Fprintln(cmd.OutOrStdout(), "no jobs")
		}
		for _, j := range list {
			next := "-"
			if j.Enabled && j.State.NextRunAtMs > 0 {
				next = time.UnixMilli(j.State.NextRunAtMs).Format("2006-01-02 15:04 MST")
			}
			state := "enabled"
			if !j.Enabled {
				state = "disabled"
				if j.State.LastStatus != "" {
					state += " (" + j.State.LastStatus + ")"
				}
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s  %-24q %s, next %s, %s → %s\n", j.ID, j.Name, j.Schedule.Describe(), next, state, j.Session())
		}
		return nil
	})
}

func newCronAddCmd(a *app) *cobra.Command {
	var add struct {
		channel, chat, message, at, expr, tz, name string
		every                                      int
	}
	addCmd := command("add", "Add a job (one of --at, --every, --cron)", func(cmd *cobra.Command) error {
		loc := a.loaded.Config.Agents.Defaults.Location()
		s, done, err := a.cronStore(cmd)
		if err != nil {
			return err
		}
		defer done()
		tool := crontool.NewTool(s.ForTool(), loc)
		ctx := tools.WithCallContext(cmd.Context(), tools.CallContext{Channel: add.channel, ChatID: add.chat, SessionKey: add.channel + ":" + add.chat})
		args := map[string]any{"action": "add", "message": add.message, "name": add.name, "tz": add.tz}
		if add.at != "" {
			args["at"] = add.at
		}
		if add.every > 0 {
			args["every_seconds"] = add.every
		}
		if add.expr != "" {
			args["cron_expr"] = add.expr
		}
		res, err := tool.Execute(ctx, args)
		if err != nil {
			return fmt.Errorf("cron add: %w", err)
		}
		fmt.Fprintln(cmd.OutOrStdout(), res.Content)
		return nil
	})
	f := addCmd.Flags()
	f.StringVar(&add.channel, "channel", "", "channel to deliver to (e.g. telegram)")
	f.StringVar(&add.chat, "to", "", "chat id to deliver to")
	f.StringVarP(&add.message, "message", "m", "", "what the agent should do when the job fires")
	f.StringVar(&add.at, "at", "", "one-off time, e.g. 2026-12-24T09:00")
	f.IntVar(&add.every, "every", 0, "interval in seconds (at least 60)")
	f.StringVar(&add.expr, "cron", "", "cron expression, e.g. '0 9 * * 1-5'")
	f.StringVar(&add.tz, "tz", "", "IANA timezone for --at and --cron")
	f.StringVar(&add.name, "name", "", "short label")
	for _, req := range []string{"channel", "to", "message"} {
		_ = addCmd.MarkFlagRequired(req)
	}
	return addCmd
}

func newCronRemoveCmd(a *app) *cobra.Command {
	return commandArg("remove ID", "Remove a job", func(cmd *cobra.Command, id string) error {
		s, done, err := a.cronStore(cmd)
		if err != nil {
			return err
		}
		defer done()
		if err := s.Remove(cmd.Context(), id, ""); err != nil {
			return fmt.Errorf("cron remove: %w", err)
		}
		fmt.Fprintf(cmd.OutOrStdout(), "removed %s\n", id)
		return nil
	})
}
