package usage

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Filter selects records. Zero fields select everything.
type Filter struct {
	// Since and Until bound the call time: Since <= t < Until.
	Since, Until time.Time
	Agent        string
	Channel      string
	// Session is the session key ("telegram:42").
	Session string
	// Sender is matched with Channel (sender ids are per platform).
	Sender string
	// Source is "user", "cron", "heartbeat", "subagent", "api" or
	// "consolidation".
	Source string
}

// GroupBy says how Summarize splits the totals.
type GroupBy string

// The groupings; GroupNone gives only the total.
const (
	GroupNone    GroupBy = ""
	GroupDay     GroupBy = "day"
	GroupModel   GroupBy = "model"
	GroupChannel GroupBy = "channel"
	GroupAgent   GroupBy = "agent"
	GroupSender  GroupBy = "sender"
	GroupSource  GroupBy = "source"
)

// ParseGroupBy checks a grouping name.
func ParseGroupBy(s string) (GroupBy, error) {
	switch g := GroupBy(s); g {
	case GroupNone, GroupDay, GroupModel, GroupChannel, GroupAgent, GroupSender, GroupSource:
		return g, nil
	}
	return "", fmt.Errorf("unknown grouping %q (want day, model, channel, agent, sender or source)", s)
}

// ParseSince reads the start of a period: a duration back from now
// ("7d" for days, "36h"), or a date ("2026-12-01", midnight in now's
// location).
func ParseSince(s string, now time.Time) (time.Time, error) {
	s = strings.TrimSpace(s)
	if days, ok := strings.CutSuffix(s, "d"); ok {
		if n, err := strconv.Atoi(days); err == nil && n >= 0 {
			return now.AddDate(0, 0, -n), nil
		}
	}
	if d, err := time.ParseDuration(s); err == nil && d >= 0 {
		return now.Add(-d), nil
	}
	if t, err := time.ParseInLocation(time.DateOnly, s, now.Location()); err == nil {
		return t, nil
	}
	return time.Time{}, fmt.Errorf("want a duration such as 7d or 12h, or a date such as 2026-12-01, got %q", s)
}

// Row is the totals of one group.
type Row struct {
	// Key is the group's value: a date (YYYY-MM-DD), a model ("provider/model"),
	// a channel, an agent, a sender ("channel:sender") or a source.
	Key string `json:"key"`
	Totals
	// Errors counts calls that did not end "ok".
	Errors int64 `json:"errors"`
	// Latency sums the calls' durations.
	Latency time.Duration `json:"-"`
	// Sources splits the group's totals by source (for charts that show
	// what the bot did on its own apart); nil for Summary.Total.
	Sources map[string]Totals `json:"sources,omitempty"`

	src []sourceTotals // Sources while the query runs
}

// Summary is the answer of a query.
type Summary struct {
	// Rows are the groups, ordered by key for days and by cost, then
	// tokens, for the others (the biggest first).
	Rows []Row `json:"rows"`
	// Total sums every selected call.
	Total Row `json:"total"`
	// Sources sums the selected calls by source, so that what the bot did
	// on its own (heartbeat, cron) can be shown apart.
	Sources map[string]Totals `json:"sources"`
	// Skipped counts lines that could not be read (a torn last line after
	// a crash, a damaged file).
	Skipped int64 `json:"skipped"`
}

// totalsJSON is the JSON shape of Totals: the cost is null when no call
// was priced (unknown is not free).
type totalsJSON struct {
	Calls      int64    `json:"calls"`
	Input      int64    `json:"input"`
	CacheRead  int64    `json:"cacheRead"`
	CacheWrite int64    `json:"cacheWrite"`
	Output     int64    `json:"output"`
	Reasoning  int64    `json:"reasoning"`
	CostUSD    *float64 `json:"costUsd"`
	Unpriced   int64    `json:"unpriced"`
	Estimated  int64    `json:"estimated"`
}

func (t Totals) json() totalsJSON {
	return totalsJSON{t.Calls, t.Input, t.CacheRead, t.CacheWrite, t.Output, t.Reas, t.Cost(), t.Unpriced, t.Estimated}
}

// MarshalJSON writes the totals with the cost null when unknown.
func (t Totals) MarshalJSON() ([]byte, error) { return json.Marshal(t.json()) }

// MarshalJSON writes the key, the totals and the errors.
func (r Row) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Key string `json:"key"`
		totalsJSON
		Errors  int64             `json:"errors"`
		Sources map[string]Totals `json:"sources,omitempty"`
	}{r.Key, r.Totals.json(), r.Errors, r.Sources})
}

// Cost is the summed cost, nil when no call was priced.
func (t Totals) Cost() *float64 {
	if t.Calls > 0 && t.Unpriced == t.Calls {
		return nil
	}
	c := t.CostUSD
	return &c
}

// Summarize reads the ledger files in dir (every worker's part) and sums
// the records f selects, grouped by by. Days begin in loc (nil: Local).
// The files are read in parallel chunks; lines that do not parse are
// counted in Skipped.
func Summarize(ctx context.Context, dir string, loc *time.Location, f Filter, by GroupBy) (*Summary, error) {
	if loc == nil {
		loc = time.Local
	}
	if _, err := ParseGroupBy(string(by)); err != nil {
		return nil, err
	}
	workers := runtime.GOMAXPROCS(0)
	aggs := make([]*aggregator, workers)
	for i := range aggs {
		aggs[i] = newAggregator(f, by, loc)
	}
	skipped, err := scanParallel(ctx, dir, loc, f.Since, f.Until, aggs)
	if err != nil {
		return nil, err
	}
	out := &Summary{Sources: map[string]Totals{}, Skipped: skipped}
	rows := map[string]*Row{}
	for _, a := range aggs {
		out.Skipped += a.skipped
		for k, r := range a.rows {
			dst := rows[k]
			if dst == nil {
				dst = &Row{Key: k}
				rows[k] = dst
			}
			dst.merge(r)
		}
		for _, src := range a.sources {
			s := out.Sources[string(src.name)]
			s.merge(&src.Totals)
			out.Sources[string(src.name)] = s
		}
		out.Total.merge(&a.total)
	}
	out.Total.Key, out.Total.src = "total", nil
	if by != GroupNone {
		for _, r := range rows {
			r.Sources = make(map[string]Totals, len(r.src))
			for _, src := range r.src {
				r.Sources[string(src.name)] = src.Totals
			}
			r.src = nil
			out.Rows = append(out.Rows, *r)
		}
		slices.SortFunc(out.Rows, func(a, b Row) int {
			if by == GroupDay {
				return strings.Compare(a.Key, b.Key)
			}
			return cmp.Or(cmp.Compare(b.CostUSD, a.CostUSD), cmp.Compare(b.Tokens(), a.Tokens()), strings.Compare(a.Key, b.Key))
		})
	}
	return out, nil
}

func (t *Totals) merge(o *Totals) {
	t.Calls += o.Calls
	t.Input += o.Input
	t.CacheRead += o.CacheRead
	t.CacheWrite += o.CacheWrite
	t.Output += o.Output
	t.Reas += o.Reas
	t.CostUSD += o.CostUSD
	t.Unpriced += o.Unpriced
	t.Estimated += o.Estimated
}

func (r *Row) merge(o *Row) {
	r.Totals.merge(&o.Totals)
	r.Errors += o.Errors
	r.Latency += o.Latency
	for _, src := range o.src {
		sourceIn(&r.src, src.name).merge(&src.Totals)
	}
}

// aggregator sums the records one scanning goroutine sees.
type aggregator struct {
	by       GroupBy
	loc      *time.Location
	since    int64
	until    int64
	match    [nStrFields][]byte // required field values (nil: any)
	rows     map[string]*Row
	sources  []sourceTotals
	total    Row
	skipped  int64
	key      []byte
	dayStart int64 // the cached day: [dayStart, dayEnd) in unix ms
	dayEnd   int64
	dayKey   string
	dayRow   *Row // the row of dayKey (GroupDay)
}

func newAggregator(f Filter, by GroupBy, loc *time.Location) *aggregator {
	a := &aggregator{by: by, loc: loc, until: 1<<63 - 1, rows: map[string]*Row{}}
	if !f.Since.IsZero() {
		a.since = f.Since.UnixMilli()
	}
	if !f.Until.IsZero() {
		a.until = f.Until.UnixMilli()
	}
	set := func(i int, v string) {
		if v != "" {
			a.match[i] = []byte(v)
		}
	}
	set(fAgent, f.Agent)
	set(fChannel, f.Channel)
	set(fSession, f.Session)
	set(fSender, f.Sender)
	set(fSource, f.Source)
	return a
}

func (a *aggregator) add(r *rawRecord) {
	if r.ts < a.since || r.ts >= a.until {
		return
	}
	for i, want := range a.match {
		if want != nil && !bytes.Equal(r.str[i], want) {
			return
		}
	}
	a.total.addRaw(r)
	sourceIn(&a.sources, r.str[fSource]).addRaw(r)
	if a.by == GroupNone {
		return
	}
	if a.by == GroupDay && a.dayRow != nil && r.ts >= a.dayStart && r.ts < a.dayEnd {
		a.dayRow.addRaw(r) // lines come in time order: mostly the same day
		return
	}
	k := a.groupKey(r)
	row := a.rows[string(k)]
	if row == nil {
		row = &Row{Key: string(k)}
		a.rows[row.Key] = row
	}
	if a.by == GroupDay {
		a.dayRow = row
	}
	row.addRaw(r)
}

// sourceIn returns the totals of a source in list, added if missing;
// there are a handful of sources, so a list beats a map (and its hashing)
// on every record.
func sourceIn(list *[]sourceTotals, src []byte) *Totals {
	if len(src) == 0 {
		src = userSource
	}
	l := *list
	for i := range l {
		if bytes.Equal(l[i].name, src) {
			return &l[i].Totals
		}
	}
	*list = append(l, sourceTotals{name: bytes.Clone(src)})
	return &(*list)[len(*list)-1].Totals
}

var userSource = []byte("user")

type sourceTotals struct {
	name []byte
	Totals
}

func (a *aggregator) groupKey(r *rawRecord) []byte {
	k := a.key[:0]
	switch a.by {
	case GroupDay:
		if r.ts < a.dayStart || r.ts >= a.dayEnd {
			t := time.UnixMilli(r.ts).In(a.loc)
			start := time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, a.loc)
			a.dayStart, a.dayEnd = start.UnixMilli(), start.AddDate(0, 0, 1).UnixMilli()
			a.dayKey = start.Format(time.DateOnly)
		}
		k = append(k, a.dayKey...)
	case GroupModel:
		if p := r.str[fProvider]; len(p) > 0 {
			k = append(append(k, p...), '/')
		}
		k = append(k, r.str[fModel]...)
	case GroupChannel:
		k = append(k, r.str[fChannel]...)
	case GroupAgent:
		k = append(k, r.str[fAgent]...)
	case GroupSender:
		k = append(append(append(k, r.str[fChannel]...), ':'), r.str[fSender]...)
	case GroupSource:
		k = append(k, r.str[fSource]...)
		if len(k) == 0 {
			k = append(k, "user"...)
		}
	}
	a.key = k
	return k
}

// addRaw counts one call (a ledger line, or a Record as one).
func (t *Totals) addRaw(r *rawRecord) {
	t.Calls++
	t.Input += r.in
	t.CacheRead += r.cr
	t.CacheWrite += r.cw
	t.Output += r.out
	t.Reas += r.rsn
	if r.hasCost {
		t.CostUSD += r.cost
	} else {
		t.Unpriced++
	}
	if r.est {
		t.Estimated++
	}
}

func (r *Row) addRaw(raw *rawRecord) {
	r.Totals.addRaw(raw)
	sourceIn(&r.src, raw.str[fSource]).addRaw(raw)
	if o := raw.str[fOutcome]; string(o) != OutcomeOK {
		r.Errors++
	}
	r.Latency += time.Duration(raw.ms) * time.Millisecond
}
