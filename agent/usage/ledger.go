package usage

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// Options configure a Ledger.
type Options struct {
	// Worker names this process's part of each month in cluster mode
	// (<month>.<worker>.jsonl); empty: one file per month.
	Worker string
	// Prices prices every record; nil: the built-in table.
	Prices *Prices
	// Location decides where days and months begin (default time.Local).
	Location *time.Location
	// Now is the clock (default time.Now); tests move it across months.
	Now func() time.Time
}

// Ledger appends records and keeps the running totals of the current day
// and month.
type Ledger struct {
	dir  string
	opts Options

	mu    sync.Mutex
	f     *os.File
	month string // the month f belongs to
	buf   []byte
	day   periodTotals
	mon   periodTotals
	// kept[k] is set for the scope kinds with running totals: global,
	// agent and channel always; chat and sender only once a budget asks
	// (keep), since those grow with every chat and sender of the month.
	kept [nScopeKinds]bool

	// Group commit: appends write under mu and wait until a sync covers
	// their line; one of them syncs (outside mu) for all that wrote
	// before it, so concurrent turns share an fsync instead of queueing
	// for one each.
	synced   *sync.Cond // on mu; broadcast when a sync ends
	written  uint64     // lines written
	durable  uint64     // lines covered by a finished sync
	syncing  bool
	failFrom uint64 // lines (failFrom, failTo] saw their sync fail
	failTo   uint64
	failErr  error
}

// periodTotals are the running totals of one day or month.
type periodTotals struct {
	key    string // "2026-12-01" or "2026-12"
	totals map[Scope]Totals
}

// Scope names what a running total counts: everything (the zero Scope),
// or one agent, chat (a session key), sender ("channel:sender") or
// channel.
type Scope struct {
	Kind ScopeKind
	ID   string
}

// ScopeKind is the kind of a Scope.
type ScopeKind uint8

// The scope kinds.
const (
	ScopeGlobal ScopeKind = iota
	ScopeAgent
	ScopeChat
	ScopeSender
	ScopeChannel
	nScopeKinds
)

// Totals are summed calls.
type Totals struct {
	Calls                                      int64
	Input, CacheRead, CacheWrite, Output, Reas int64
	// CostUSD sums the priced calls; Unpriced counts the others.
	CostUSD  float64
	Unpriced int64
	// Estimated counts calls whose tokens were estimated.
	Estimated int64
}

// Tokens is input plus output.
func (t Totals) Tokens() int64 { return t.Input + t.Output }

// Open opens the ledger in dir (created 0700 if missing) and loads the
// running totals of the current day and month from the files of every
// worker. It opens no file for writing until the first Append.
func Open(ctx context.Context, dir string, opts Options) (*Ledger, error) {
	if opts.Location == nil {
		opts.Location = time.Local
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Prices == nil {
		opts.Prices = NewPrices(nil)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("usage: %w", err)
	}
	l := &Ledger{dir: dir, opts: opts}
	l.synced = sync.NewCond(&l.mu)
	l.kept[ScopeGlobal], l.kept[ScopeAgent], l.kept[ScopeChannel] = true, true, true
	if err := l.load(ctx); err != nil {
		return nil, err
	}
	return l, nil
}

// load counts the records of the current month from the files of every
// worker into fresh running totals. Called before the ledger is shared or
// with mu held.
func (l *Ledger) load(ctx context.Context) error {
	now := l.opts.Now().In(l.opts.Location)
	l.day.reset(now.Format(time.DateOnly))
	l.mon.reset(now.Format("2006-01"))
	start := time.Date(now.Year(), now.Month(), 1, 0, 0, 0, 0, l.opts.Location)
	return scan(ctx, l.dir, l.opts.Location, start, time.Time{}, func(r *rawRecord) {
		rec := r.record()
		l.count(&rec)
	})
}

// keep makes the ledger keep running totals for the scope kinds too,
// reading the month's files again when one was not kept before.
func (l *Ledger) keep(ctx context.Context, kinds ...ScopeKind) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	fresh := false
	for _, k := range kinds {
		fresh = fresh || !l.kept[k]
		l.kept[k] = true
	}
	if !fresh {
		return nil
	}
	return l.load(ctx)
}

func (p *periodTotals) reset(key string) {
	p.key = key
	p.totals = map[Scope]Totals{}
}

func (p *periodTotals) add(r *Record, kept *[nScopeKinds]bool) {
	// A Record counts as its ledger line does: one home for the sums.
	raw := rawRecord{in: r.Input, cr: r.CacheRead, cw: r.CacheWrite, out: r.Output, rsn: r.Reasoning, est: r.Estimated}
	if r.CostUSD != nil {
		raw.cost, raw.hasCost = *r.CostUSD, true
	}
	for k := range ScopeKind(nScopeKinds) {
		if !kept[k] {
			continue
		}
		s := scopeOf(r, k)
		t := p.totals[s]
		t.addRaw(&raw)
		p.totals[s] = t
	}
}

// scopeOf is the scope of kind k that r counts in.
func scopeOf(r *Record, k ScopeKind) Scope {
	switch k {
	case ScopeAgent:
		return Scope{k, r.Agent}
	case ScopeChat:
		return Scope{k, r.Session}
	case ScopeSender:
		return Scope{k, r.Channel + ":" + r.Sender}
	case ScopeChannel:
		return Scope{k, r.Channel}
	}
	return Scope{}
}

// count adds r to the running totals of its day and month, moving them on
// when r starts a new period. Records of past periods are not counted.
func (l *Ledger) count(r *Record) {
	t := r.Time.In(l.opts.Location)
	if d := t.Format(time.DateOnly); d >= l.day.key {
		if d > l.day.key {
			l.day.reset(d)
		}
		l.day.add(r, &l.kept)
	}
	if m := t.Format("2006-01"); m >= l.mon.key {
		if m > l.mon.key {
			l.mon.reset(m)
		}
		l.mon.add(r, &l.kept)
	}
}

// Append prices r (unless it carries a cost), writes it and syncs it to
// disk, and adds it to the running totals. It returns the record as
// stored. A zero Time is the ledger's clock.
func (l *Ledger) Append(r Record) (Record, error) {
	if r.Time.IsZero() {
		r.Time = l.opts.Now()
	}
	if r.CostUSD == nil {
		r.CostUSD = l.opts.Prices.Cost(&r)
	}
	month := r.Time.In(l.opts.Location).Format("2006-01")
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.openMonth(month); err != nil {
		return r, err
	}
	l.buf = appendLine(l.buf[:0], &r)
	if _, err := l.f.Write(l.buf); err != nil {
		return r, fmt.Errorf("usage: write %s: %w", l.f.Name(), err)
	}
	l.written++
	mine := l.written
	l.count(&r)
	for l.durable < mine {
		if l.syncing {
			l.synced.Wait()
			continue
		}
		l.syncing = true
		f, upTo, from := l.f, l.written, l.durable
		l.mu.Unlock()
		err := f.Sync()
		l.mu.Lock()
		l.syncing, l.durable = false, upTo
		if err != nil {
			l.failFrom, l.failTo, l.failErr = from, upTo, fmt.Errorf("usage: sync %s: %w", f.Name(), err)
		}
		l.synced.Broadcast()
	}
	if l.failErr != nil && mine > l.failFrom && mine <= l.failTo {
		return r, l.failErr
	}
	return r, nil
}

// waitSynced waits until no sync runs and every written line is durable
// (before f is closed). Called with mu held.
func (l *Ledger) waitSynced() error {
	for l.syncing {
		l.synced.Wait()
	}
	if l.f == nil || l.durable == l.written {
		return nil
	}
	err := l.f.Sync()
	l.durable = l.written
	return err
}

// openMonth makes f the file of month. Called with mu held.
func (l *Ledger) openMonth(month string) error {
	if l.f != nil && l.month == month {
		return nil
	}
	if l.f != nil && month < l.month {
		return nil // a late record of the last month goes where we are
	}
	name := month + ".jsonl"
	if l.opts.Worker != "" {
		name = month + "." + l.opts.Worker + ".jsonl"
	}
	path := filepath.Join(l.dir, name)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("usage: %w", err)
	}
	if err := startOnFreshLine(f); err != nil {
		f.Close()
		return fmt.Errorf("usage: %s: %w", path, err)
	}
	if l.f != nil {
		_ = l.waitSynced()
		_ = l.f.Close()
	}
	l.f, l.month = f, month
	return nil
}

// startOnFreshLine ends a torn last line (a crash mid-write) so the next
// record is not glued to it; readers skip the fragment.
func startOnFreshLine(f *os.File) error {
	st, err := f.Stat()
	if err != nil || st.Size() == 0 {
		return err
	}
	last := make([]byte, 1)
	if _, err := f.ReadAt(last, st.Size()-1); err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	if last[0] == '\n' {
		return nil
	}
	_, err = f.Write([]byte{'\n'})
	return err
}

// Today returns the running totals of scope for the current day. Chat and
// sender totals are kept only while a budget caps them (zero otherwise;
// Period reads them from the files).
func (l *Ledger) Today(s Scope) Totals { return l.totals(&l.day, time.DateOnly, s) }

// ThisMonth returns the running totals of scope for the current month;
// see Today for which are kept.
func (l *Ledger) ThisMonth(s Scope) Totals { return l.totals(&l.mon, "2006-01", s) }

func (l *Ledger) totals(p *periodTotals, layout string, s Scope) Totals {
	now := l.opts.Now().In(l.opts.Location).Format(layout)
	l.mu.Lock()
	defer l.mu.Unlock()
	if p.key != now {
		return Totals{} // nothing recorded since the period began
	}
	return p.totals[s]
}

// Period returns the totals of scope for the current day and month: the
// running totals when they are kept, else summed from the month's files.
func (l *Ledger) Period(ctx context.Context, s Scope) (today, month Totals, err error) {
	l.mu.Lock()
	kept := l.kept[s.Kind]
	l.mu.Unlock()
	if kept {
		return l.Today(s), l.ThisMonth(s), nil
	}
	f := Filter{Session: s.ID}
	if s.Kind == ScopeSender {
		f = Filter{}
		f.Channel, f.Sender, _ = strings.Cut(s.ID, ":")
	}
	now := l.opts.Now().In(l.opts.Location)
	f.Since = time.Date(now.Year(), now.Month(), 1, 0, 0, 0, 0, l.opts.Location)
	sum, err := l.Summary(ctx, f, GroupDay)
	if err != nil {
		return Totals{}, Totals{}, err
	}
	for _, r := range sum.Rows {
		if r.Key == now.Format(time.DateOnly) {
			today = r.Totals
		}
	}
	return today, sum.Total.Totals, nil
}

// Summary queries the ledger's folder (all workers' files); see Summarize.
func (l *Ledger) Summary(ctx context.Context, f Filter, by GroupBy) (*Summary, error) {
	return Summarize(ctx, l.dir, l.opts.Location, f, by)
}

// Dir is the ledger's folder.
func (l *Ledger) Dir() string { return l.dir }

// Location is where the ledger's days begin.
func (l *Ledger) Location() *time.Location { return l.opts.Location }

// Close closes the current file.
func (l *Ledger) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return nil
	}
	err := errors.Join(l.waitSynced(), l.f.Close())
	l.f = nil
	return err
}
