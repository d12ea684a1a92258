package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/nanobot-go/nanobot/agent/usage"
	"github.com/nanobot-go/nanobot/gateway"
)

func newUsageCmd(a *app) *cobra.Command {
	var since, by string
	var asJSON bool
	cmd := command("usage", "Show tokens and cost from the usage ledger (docs/usage.md)", func(cmd *cobra.Command) error {
		loc := a.loaded.Config.Agents.Defaults.Location()
		from, err := parseSince(since, time.Now().In(loc))
		if err != nil {
			return err
		}
		group, err := usage.ParseGroupBy(by)
		if err != nil {
			return fmt.Errorf("--by: %w", err)
		}
		s, err := usage.Summarize(cmd.Context(), gateway.UsageDir(a.loaded.Paths), loc, usage.Filter{Since: from}, group)
		if err != nil {
			return err
		}
		if asJSON {
			return writeUsageJSON(cmd.OutOrStdout(), from, group, s)
		}
		writeUsageTable(cmd.OutOrStdout(), from, group, s)
		return nil
	})
	f := cmd.Flags()
	f.StringVar(&since, "since", "30d", `start of the period: a duration back from now ("7d", "12h") or a date ("2026-12-01")`)
	f.StringVar(&by, "by", "day", "group by day, model, channel, agent, sender or source")
	f.BoolVar(&asJSON, "json", false, "print JSON instead of a table")
	return cmd
}

// parseSince reads --since (see usage.ParseSince).
func parseSince(s string, now time.Time) (time.Time, error) {
	t, err := usage.ParseSince(s, now)
	if err != nil {
		return time.Time{}, fmt.Errorf("--since: %w", err)
	}
	return t, nil
}

func writeUsageJSON(w io.Writer, since time.Time, by usage.GroupBy, s *usage.Summary) error {
	out := struct {
		Since      time.Time `json:"since"`
		By         string    `json:"by"`
		PricesAsOf string    `json:"pricesAsOf"`
		*usage.Summary
	}{since, string(by), usage.PricesAsOf, s}
	if out.Rows == nil {
		out.Rows = []usage.Row{}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

func writeUsageTable(w io.Writer, since time.Time, by usage.GroupBy, s *usage.Summary) {
	fmt.Fprintf(w, "Usage since %s\n\n", since.Format("2006-01-02 15:04"))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "%s\tCALLS\tINPUT\tCACHED\tOUTPUT\tCOST\t\n", strings.ToUpper(string(by)))
	row := func(key string, t usage.Totals, errs int64) {
		calls := strconv.FormatInt(t.Calls, 10)
		if errs > 0 {
			calls += fmt.Sprintf(" (%d failed)", errs)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t\n", key, calls, usage.FormatTokens(t.Input),
			usage.FormatTokens(t.CacheRead), usage.FormatTokens(t.Output), usage.FormatCost(t))
	}
	for _, r := range s.Rows {
		row(r.Key, r.Totals, r.Errors)
	}
	row("TOTAL", s.Total.Totals, s.Total.Errors)
	for _, src := range []string{"heartbeat", "cron"} {
		if t, ok := s.Sources[src]; ok {
			row("of which "+src, t, 0)
		}
	}
	_ = tw.Flush()
	fmt.Fprintf(w, "\nPrices as of %s (override with providers.<name>.prices); \"?\" is a model without a known price.\n", usage.PricesAsOf)
	if s.Total.Estimated > 0 {
		fmt.Fprintf(w, "%d calls were estimated (the provider reported no usage).\n", s.Total.Estimated)
	}
	if s.Skipped > 0 {
		fmt.Fprintf(w, "%d unreadable lines skipped (a torn last line after a crash).\n", s.Skipped)
	}
}
