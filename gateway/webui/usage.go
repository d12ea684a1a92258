package webui

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/nanobot-go/nanobot/agent/usage"
)

// usageGroupings are the groupings the usage endpoint offers.
var usageGroupings = map[string]usage.GroupBy{
	"day": usage.GroupDay, "model": usage.GroupModel, "channel": usage.GroupChannel,
	"agent": usage.GroupAgent, "source": usage.GroupSource,
}

// usageReply is what GET /api/usage answers.
type usageReply struct {
	Since    time.Time `json:"since"`
	Until    time.Time `json:"until"`
	By       string    `json:"by"`
	Timezone string    `json:"timezone"`
	// PricesAsOf dates the built-in price table.
	PricesAsOf string `json:"pricesAsOf"`
	// Total sums every call of the period.
	Total usage.Row `json:"total"`
	// Rows are the groups; by day every day of the period has one, oldest
	// first, zero when nothing was called that day.
	Rows []usage.Row `json:"rows"`
	// Sources sums the period by source; Background repeats heartbeat and
	// cron (always present), what the bot spent on its own.
	Sources    map[string]usage.Totals `json:"sources"`
	Background map[string]usage.Totals `json:"background"`
	// Skipped counts ledger lines that could not be read.
	Skipped int64 `json:"skipped"`
}

// getUsage is GET /api/usage?since=30d&by=day|model|channel|agent|source:
// the usage ledger's totals for the period, grouped. since is "30d" (the
// last 30 calendar days, today included), "12h", or a date; by defaults to
// day. A cost is null when no call of the group had a known price.
func (s *Server) getUsage(w http.ResponseWriter, r *http.Request) {
	if s.o.UsageDir == "" {
		writeError(w, http.StatusServiceUnavailable, "", "this gateway keeps no usage ledger")
		return
	}
	loc := s.o.UsageLocation
	if loc == nil {
		loc = time.Local
	}
	now := s.o.Now().In(loc)
	q := r.URL.Query()
	sinceArg := q.Get("since")
	if sinceArg == "" {
		sinceArg = "30d"
	}
	since, err := usageSince(sinceArg, now)
	if err != nil {
		writeError(w, http.StatusBadRequest, "since", err.Error())
		return
	}
	byArg := q.Get("by")
	if byArg == "" {
		byArg = "day"
	}
	by, ok := usageGroupings[byArg]
	if !ok {
		writeError(w, http.StatusBadRequest, "by", "want day, model, channel, agent or source")
		return
	}
	sum, err := usage.Summarize(r.Context(), s.o.UsageDir, loc, usage.Filter{Since: since}, by)
	if err != nil {
		s.log.Error("usage query failed", "err", err)
		writeError(w, http.StatusInternalServerError, "", "could not read the usage ledger")
		return
	}
	rows := sum.Rows
	if by == usage.GroupDay {
		rows = everyDay(rows, since, now)
	}
	if rows == nil {
		rows = []usage.Row{}
	}
	zone := loc.String()
	if loc == time.Local {
		zone = now.Format("MST")
	}
	bg := map[string]usage.Totals{}
	for _, src := range []string{"heartbeat", "cron"} {
		bg[src] = sum.Sources[src]
	}
	writeJSON(w, http.StatusOK, usageReply{
		Since: since, Until: now, By: byArg, Timezone: zone, PricesAsOf: usage.PricesAsOf,
		Total: sum.Total, Rows: rows, Sources: sum.Sources, Background: bg, Skipped: sum.Skipped,
	})
}

// usageSince reads since: "Nd" is the last N calendar days (from midnight
// N-1 days ago), so a chart by day has N whole days; anything else as
// `nanobot usage --since`.
func usageSince(arg string, now time.Time) (time.Time, error) {
	if days, ok := strings.CutSuffix(strings.TrimSpace(arg), "d"); ok {
		if n, err := strconv.Atoi(days); err == nil && n >= 1 && n <= 3660 {
			midnight := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, now.Location())
			return midnight.AddDate(0, 0, 1-n), nil
		}
	}
	return usage.ParseSince(arg, now)
}

// everyDay returns one row per day from since to now, the rows' own where
// there are calls and zero rows between them.
func everyDay(rows []usage.Row, since, now time.Time) []usage.Row {
	byKey := make(map[string]usage.Row, len(rows))
	for _, r := range rows {
		byKey[r.Key] = r
	}
	var out []usage.Row
	day := time.Date(since.Year(), since.Month(), since.Day(), 0, 0, 0, 0, since.Location())
	for ; !day.After(now) && len(out) < 3660; day = day.AddDate(0, 0, 1) {
		k := day.Format(time.DateOnly)
		r, ok := byKey[k]
		if !ok {
			r = usage.Row{Key: k}
		}
		out = append(out, r)
	}
	return out
}
