package main

import (
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"
	"time"
)

// soakTotals sums the chats.
func (r *soakResult) totals() chatTally {
	var t chatTally
	for _, c := range r.Chats {
		t.Sent += c.Sent
		t.Answered += c.Answered
		t.Interrupted += c.Interrupted
		t.Failed += c.Failed
		t.Lost += c.Lost
		t.Duplicates += c.Duplicates
		t.OutOfOr += c.OutOfOr
		t.Stops += c.Stops
		t.StopsAcked += c.StopsAcked
		t.StopsLost += c.StopsLost
		t.Misrouted += c.Misrouted
	}
	return t
}

func (r *soakResult) apiTotals() apiTally {
	var t apiTally
	for _, a := range r.API {
		t.Sent += a.Sent
		t.Answered += a.Answered
		t.Left += a.Left
		t.Refused += a.Refused
		t.Cut += a.Cut
		t.Errors += a.Errors
		t.Wrong += a.Wrong
	}
	return t
}

// trend is one resource of one process: the median of its readings in the
// middle third of the send phase against the last third.
type trend struct {
	Proc, Metric   string
	Mid, Last, Max float64
	N              int // readings in the two thirds
	Flat, Measured bool
}

// Resource tolerances: the last third may exceed the middle third by this
// share plus an absolute slack (a few goroutines of a request in flight,
// a connection, the heap's next step) and still count as flat.
const (
	trendShare      = 0.25
	goroutineSlack  = 15
	fdSlack         = 10
	rssSlack        = 10 << 20
	trendMinSamples = 3
)

// trends compares the readings of each process, leaving out those taken
// in the first Warmup of each of its runs (a restarted process starts
// cold) and those of the drain.
func (r *soakResult) trends() []trend {
	start := r.Started
	third := r.SendPhase / 3
	var procs []string
	for _, s := range r.Samples {
		if !slices.Contains(procs, s.Proc) {
			procs = append(procs, s.Proc)
		}
	}
	var out []trend
	for _, p := range procs {
		var mid, last [3][]float64
		var maxes [3]float64
		for _, s := range r.Samples {
			if s.Proc != p || s.Age < r.Opts.Warmup || s.At.After(start.Add(r.SendPhase)) {
				continue
			}
			vals := [3]float64{float64(s.Goroutines), float64(s.FDs), float64(s.RSS)}
			for i, v := range vals {
				if v < 0 {
					continue
				}
				maxes[i] = max(maxes[i], v)
				switch {
				case s.At.Before(start.Add(third)):
				case s.At.Before(start.Add(2 * third)):
					mid[i] = append(mid[i], v)
				default:
					last[i] = append(last[i], v)
				}
			}
		}
		for i, name := range []string{"goroutines", "open files", "RSS"} {
			t := trend{Proc: p, Metric: name, Max: maxes[i], N: len(mid[i]) + len(last[i])}
			if len(mid[i]) >= trendMinSamples && len(last[i]) >= trendMinSamples {
				t.Measured = true
				t.Mid, t.Last = median(mid[i]), median(last[i])
				slack := []float64{goroutineSlack, fdSlack, rssSlack}[i]
				t.Flat = t.Last <= t.Mid*(1+trendShare)+slack
			}
			out = append(out, t)
		}
	}
	return out
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	sort.Float64s(s)
	return s[len(s)/2]
}

// soakVerdict is the run's pass or fail, with why.
type soakVerdict struct {
	Pass bool
	Why  []string
}

// verdict: nothing lost (questions and /stops), nothing out of order or
// misrouted, no API answer carrying the wrong marker, every measured
// resource flat after warm-up, and the drain settled.
func (r *soakResult) verdict() soakVerdict {
	t, a := r.totals(), r.apiTotals()
	var why []string
	if t.Lost > 0 {
		why = append(why, fmt.Sprintf("%d messages lost", t.Lost))
	}
	if t.StopsLost > 0 {
		why = append(why, fmt.Sprintf("%d /stop never acknowledged", t.StopsLost))
	}
	if t.OutOfOr > 0 {
		why = append(why, fmt.Sprintf("%d answers out of order", t.OutOfOr))
	}
	if t.Misrouted > 0 {
		why = append(why, fmt.Sprintf("%d answers in the wrong chat", t.Misrouted))
	}
	if a.Wrong > 0 {
		why = append(why, fmt.Sprintf("%d API answers without their marker", a.Wrong))
	}
	if len(r.LogProblems) > 0 {
		why = append(why, fmt.Sprintf("%d panics or data races in the logs", len(r.LogProblems)))
	}
	if t.Sent == 0 || (t.Answered == 0 && t.Sent > 0) {
		why = append(why, "nothing was answered")
	}
	for _, tr := range r.trends() {
		if tr.Measured && !tr.Flat {
			why = append(why, fmt.Sprintf("%s %s grew: %s → %s", tr.Proc, tr.Metric, tr.fmt(tr.Mid), tr.fmt(tr.Last)))
		}
	}
	return soakVerdict{Pass: len(why) == 0, Why: why}
}

func (tr trend) fmt(v float64) string {
	if tr.Metric == "RSS" {
		return fmt.Sprintf("%.1f MiB", v/(1<<20))
	}
	return fmt.Sprintf("%.0f", v)
}

// dupGroup is the duplicates whose second showing followed the same
// fault.
type dupGroup struct {
	after   string // the last fault before the second showings, other than /stop
	markers []string
	between map[string]int // faults between the first and second showings
}

// groupDups groups the duplicates by the last fault (not a /stop) before
// their second showing, and counts the faults between their showings.
func (r *soakResult) groupDups() []*dupGroup {
	var out []*dupGroup
	byAfter := map[string]*dupGroup{}
	for _, d := range r.Dups {
		after := "no fault"
		var last *faultEvent
		for i := range r.Faults {
			f := &r.Faults[i]
			if strings.HasPrefix(f.Kind, "stop") || f.At.After(d.dup) {
				continue
			}
			if last == nil || f.At.After(last.At) {
				last = f
			}
		}
		if last != nil {
			after = fmt.Sprintf("%s at %s", last.Kind, r.at(last.At))
		}
		g := byAfter[after]
		if g == nil {
			g = &dupGroup{after: after, between: map[string]int{}}
			byAfter[after] = g
			out = append(out, g)
		}
		g.markers = append(g.markers, fmt.Sprintf("%s (%s, %s)", soakMarker(d.chat, d.n), r.at(d.first), r.at(d.dup)))
		for _, f := range r.Faults {
			if !f.End.Before(d.first) && !f.At.After(d.dup) {
				g.between[f.Kind]++
			}
		}
	}
	return out
}

func (g *dupGroup) String() string {
	var kinds []string
	for k := range g.between {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	var parts []string
	for _, k := range kinds {
		parts = append(parts, fmt.Sprintf("%s ×%d", k, g.between[k]))
	}
	shown := g.markers
	more := ""
	if len(shown) > 4 {
		shown, more = shown[:4], fmt.Sprintf(" and %d more", len(g.markers)-4)
	}
	return fmt.Sprintf("answered twice, shown again after %s: %d (%s%s; first and second showing); faults between the showings: %s",
		g.after, len(g.markers), strings.Join(shown, ", "), more, strings.Join(parts, ", "))
}

// at is a time as an offset into the run.
func (r *soakResult) at(t time.Time) string {
	return fmt.Sprintf("%.1fs", t.Sub(r.Started).Seconds())
}

// markdown is the run's section of the results page.
func (r *soakResult) markdown() string {
	var b strings.Builder
	w := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	o := r.Opts
	title := "one gateway"
	if o.Mode == "cluster" {
		title = fmt.Sprintf("cluster: a channels process and %d workers over NATS JetStream", o.Workers)
	}
	w("### %s (`-mode %s`)\n\n", strings.ToUpper(title[:1])+title[1:], o.Mode)
	w("`go run ./bench soak -mode %s -duration %s -chats %d -api %d -seed %d`", o.Mode, o.Duration, o.Chats, o.APIClients, o.Seed)
	if o.Mode == "cluster" {
		w(" (`-workers %d`)", o.Workers)
	}
	w(", run on %s, %s. Send phase %s, then the drain took %s", r.Started.UTC().Format("2006-01-02"), r.Machine,
		r.SendPhase.Round(time.Second), r.Drain.Round(time.Second))
	if r.Settled {
		w(" (everything settled)")
	} else {
		w(" (**not settled** when the drain's limit of %s ran out)", o.Drain)
	}
	w(". Load average (1 min) at the start %s, at the end %s.\n\n", r.LoadBefore, r.LoadAfter)

	v := r.verdict()
	if v.Pass {
		w("**Verdict: pass.** ")
	} else {
		w("**Verdict: FAIL** (%s). ", strings.Join(v.Why, "; "))
	}
	t, a := r.totals(), r.apiTotals()
	w("%d chat messages sent: %d answered, %d interrupted by an acknowledged /stop, %d failed with an error reply, **%d lost**, %d answered twice, **%d out of order**. ",
		t.Sent, t.Answered, t.Interrupted, t.Failed, t.Lost, t.Duplicates, t.OutOfOr)
	w("/stop: %d sent, %d acknowledged, %d never.", t.Stops, t.StopsAcked, t.StopsLost)
	if len(r.API) > 0 {
		w(" API: %d requests, %d answered with their marker, %d left mid-answer by the client on purpose, %d refused (503 while the disk was full, 429 busy, or the gateway down), %d cut by a kill, %d errors, **%d wrong**.",
			a.Sent, a.Answered, a.Left, a.Refused, a.Cut, a.Errors, a.Wrong)
	}
	w("\n\n")

	// Faults.
	w("| fault | times | in all | |\n|---|---|---|---|\n")
	type agg struct {
		n    int
		took time.Duration
		errs int
	}
	byKind := map[string]*agg{}
	var order []string
	for _, f := range r.Faults {
		g := byKind[f.Kind]
		if g == nil {
			g = &agg{}
			byKind[f.Kind] = g
			order = append(order, f.Kind)
		}
		g.n++
		g.took += f.End.Sub(f.At)
		if f.Err != "" {
			g.errs++
		}
	}
	sort.Strings(order)
	for _, k := range order {
		g := byKind[k]
		note := soakFaultNote(k)
		if g.errs > 0 {
			note += fmt.Sprintf(" **%d did not complete** (see the log)", g.errs)
		}
		w("| %s | %d | %s | %s |\n", k, g.n, g.took.Round(time.Second), note)
	}
	if r.DiskSkipped != "" {
		w("| disk-full | skipped | | %s |\n", r.DiskSkipped)
	}
	var mk []string
	for k := range r.ModelFaults {
		mk = append(mk, k)
	}
	sort.Strings(mk)
	var mparts []string
	for _, k := range mk {
		mparts = append(mparts, fmt.Sprintf("%s %d", k, r.ModelFaults[k]))
	}
	w("| model | %d of %d requests | | %s |\n", sumMap(r.ModelFaults), r.ModelRequests, strings.Join(mparts, ", "))
	w("| platform | | | %d requests cut during outages, %d answered 429 |\n", r.PlatformCut, r.Platform429)
	var runs []string
	for name, n := range r.Runs {
		runs = append(runs, fmt.Sprintf("%s %d", name, n))
	}
	sort.Strings(runs)
	w("\nProcess starts (the first included): %s.\n\n", strings.Join(runs, ", "))

	// Resources.
	w("Resources, each process read every %s (goroutines from `/metrics` `go_goroutines`, open files from `/proc/<pid>/fd`, RSS from `VmRSS` in `/proc/<pid>/status`), leaving out the first %s of each start; median of the middle third of the send phase against the last third:\n\n", o.Sample, o.Warmup)
	w("| process | figure | middle third | last third | max | flat |\n|---|---|---|---|---|---|\n")
	for _, tr := range r.trends() {
		if !tr.Measured {
			w("| %s | %s | — | — | %s | too few readings (%d) |\n", tr.Proc, tr.Metric, tr.fmt(tr.Max), tr.N)
			continue
		}
		flat := "yes"
		if !tr.Flat {
			flat = "**no**"
		}
		w("| %s | %s | %s | %s | %s | %s |\n", tr.Proc, tr.Metric, tr.fmt(tr.Mid), tr.fmt(tr.Last), tr.fmt(tr.Max), flat)
	}
	if fin := r.finalSamples(); fin != "" {
		w("\nAfter the drain: %s.\n", fin)
	}

	// Per session.
	w("\n<details><summary>Per chat and per API client</summary>\n\n")
	w("| session | sent | answered | interrupted | failed | lost | twice | out of order | /stop sent / acked |\n|---|---|---|---|---|---|---|---|---|\n")
	for _, c := range r.Chats {
		w("| telegram:%d | %d | %d | %d | %d | %d | %d | %d | %d / %d |\n", c.Chat, c.Sent, c.Answered, c.Interrupted, c.Failed, c.Lost, c.Duplicates, c.OutOfOr, c.Stops, c.StopsAcked)
	}
	w("| **all chats** | %d | %d | %d | %d | %d | %d | %d | %d / %d |\n", t.Sent, t.Answered, t.Interrupted, t.Failed, t.Lost, t.Duplicates, t.OutOfOr, t.Stops, t.StopsAcked)
	if len(r.API) > 0 {
		w("\n| API client | requests | answered | left on purpose | refused | cut | errors | wrong |\n|---|---|---|---|---|---|---|---|\n")
		for _, c := range r.API {
			w("| api:soak-api-%d | %d | %d | %d | %d | %d | %d | %d |\n", c.Client, c.Sent, c.Answered, c.Left, c.Refused, c.Cut, c.Errors, c.Wrong)
		}
	}
	w("\n</details>\n")

	// What needs a reader's eye.
	var notes []string
	for _, c := range r.Chats {
		for _, w := range c.LostWhen {
			notes = append(notes, "lost: "+w)
		}
		for _, why := range c.Reasons {
			notes = append(notes, "failed with an error reply: "+why)
		}
	}
	notes = append(notes, r.Problems...)
	notes = append(notes, r.LogProblems...)
	for _, g := range r.groupDups() {
		notes = append(notes, g.String())
	}
	for _, c := range r.API {
		for _, s := range c.Samples {
			notes = append(notes, "API: "+s)
		}
	}
	if len(r.Others) > 0 {
		var ks []string
		for k := range r.Others {
			ks = append(ks, k)
		}
		sort.Strings(ks)
		for _, k := range ks {
			notes = append(notes, fmt.Sprintf("other bot messages: %d × %q", r.Others[k], clip(k, 120)))
		}
	}
	if len(notes) > 0 {
		w("\n")
		const most = 40
		for i, n := range notes {
			if i == most {
				w("- … and %d more\n", len(notes)-most)
				break
			}
			w("- %s\n", n)
		}
	}
	return b.String()
}

// finalSamples describes each process's last reading, after the drain.
func (r *soakResult) finalSamples() string {
	last := map[string]resSample{}
	var names []string
	for _, s := range r.Samples {
		if _, ok := last[s.Proc]; !ok {
			names = append(names, s.Proc)
		}
		last[s.Proc] = s
	}
	var parts []string
	for _, n := range names {
		s := last[n]
		parts = append(parts, fmt.Sprintf("%s %d goroutines, %d open files, %.1f MiB RSS", n, s.Goroutines, s.FDs, float64(s.RSS)/(1<<20)))
	}
	return strings.Join(parts, "; ")
}

func soakFaultNote(kind string) string {
	return map[string]string{
		"kill-9":             "SIGKILL of the gateway (cluster: the channels process), started again on the same state after 0.2–3 s",
		"worker-kill":        "SIGKILL of a worker, started again after 1–8 s",
		"nats-restart":       "the NATS server shut down and started again on the same port and store after 1–5 s",
		"outage":             "every Bot API connection cut, long polls included, for 2–12 s",
		"429":                "sends and edits answered 429 with retry_after 1–4 s, for 3–12 s",
		"stop":               "/stop from a chat whose answer is streaming (else one with a message waiting)",
		"stop (hung answer)": "/stop from a chat whose answer the model hung mid-way",
		"disk-full":          "the gateway's home (a tmpfs) filled up for 4–12 s, then freed",
	}[kind]
}

func sumMap(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

func clip(s string, n int) string {
	s = strings.ReplaceAll(s, "\n", " ")
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// The soak's section of the results page: the method once, then one
// block per mode, each replaced by the next run of that mode.
const soakSectionTitle = "## Chaos soak"

func soakBlock(mode string) (begin, end string) {
	return "<!-- soak:" + mode + ":begin -->", "<!-- soak:" + mode + ":end -->"
}

// soakMethod is the prose of the section.
const soakMethod = `<!-- Written by ` + "`go run ./bench soak -out docs/benchmarks.md`" + ` (bench/soak*.go); ` + "`go run ./bench`" + ` keeps this section as it is. -->

` + "`go run ./bench soak`" + ` runs the real binary against the Telegram and model fakes for a set time while a driver injects faults, then stops the faults, waits for everything to settle, and counts. Flags: ` + "`-duration`" + ` (send phase), ` + "`-drain`" + ` (the most to wait afterwards), ` + "`-chats`" + `, ` + "`-api`" + ` (API clients), ` + "`-seed`" + `, ` + "`-mode single|cluster`" + `, ` + "`-workers`" + `, ` + "`-fault-every`" + `, ` + "`-max-fault`" + ` (the longest outage, rate limit, full disk or down time), ` + "`-model-faults`" + `, ` + "`-faults`" + ` (a subset), ` + "`-keep`" + ` (keep logs and state), ` + "`-out`" + ` (write the run here). ` + "`go test -run TestSoakSmoke ./bench/`" + ` runs one minute of it in the test suite (skipped with ` + "`-short`" + `).

- **Users.** Each chat writes a question carrying its own marker (` + "`soak-<chat>-<n>`" + `, n counting up per chat) every 0.3–3 s, with at most 3 unanswered at a time. The model answers with the markers of every user message after the last assistant message of its request, each in brackets at the end of the answer, so a reply names exactly what it answers and a stream cut short never shows a whole marker. The driver follows every message and edit the bot makes on the fake. API clients ask ` + "`/v1/chat/completions`" + ` (streaming, a named session each, the key from ` + "`api.apiKey`" + `) one question at a time and hang up after the first piece of 40% of the answers.
- **Faults.** The injector runs one fault at a time, in rounds holding every kind once in a random order, with gaps of 0.5–1.5 × ` + "`-fault-every`" + ` (table of kinds under each run). Beside it, the model fails or stalls a share of its requests (` + "`-model-faults`" + `): 500, 503 with Retry-After, headers then nothing (the gateway's stream idle timeout, 6 s here, gives up and retries), a slow stream, or part of the answer then nothing (the chat's user then sends /stop, as a person would); a request gets at most two retryable faults, fewer than the provider's three retries. The platform's faults come from a proxy between the gateway and the Telegram fake. The full disk is a tmpfs mounted as the gateway's home and filled with a ballast file (this needs root; otherwise the run says "disk-full: skipped").
- **Counting**, after the drain (the send phase over, every fault off, every process up; the drain ends when every message is settled and 5 s passed without change, or at ` + "`-drain`" + `). A message sent during an outage is delivered later, so nothing counts before the drain. Each question is *answered* (a bot message showed its marker), *interrupted* (unanswered, and a /stop the same chat sent after it was acknowledged "Stopped.": the gateway said it stopped the running turn and dropped what waited behind it), *failed* (unanswered, and an error reply "Sorry, …" came after it while no later question of the chat had been answered yet: turns of a chat run in order, so that reply is its), or else **lost**. A /stop is lost if it got no acknowledgement ("Stopped." or "Nothing to stop."). *Twice*: a marker shown in a second bot message (edits of one message are one message); each is listed with the faults around it. By docs/gateway.md the inbound side is at-least-once and replies exactly once except the window between the platform accepting a part and the gateway recording it, so a kill -9 can show an answer twice; in a cluster, a worker that stalls for 2/3 of ` + "`leaseTtlS`" + ` hands its turn over and the answer streams again (docs/cluster.md). *Out of order*: a question whose marker first showed after a later question's. API answers must carry their own marker and no other client's.
- **Resources.** Every 5 s: ` + "`go_goroutines`" + ` from each process's ` + "`/metrics`" + `, the entries of ` + "`/proc/<pid>/fd`" + ` and ` + "`VmRSS`" + `. Readings in the first 20 s after each start are left out. A figure is flat when the median of the last third of the send phase is at most 1.25 × the middle third's plus a slack (15 goroutines, 10 files, 10 MiB).
- **Verdict**: pass when nothing is lost, nothing is out of order or in the wrong chat, no API answer carries the wrong marker, no process log shows a panic or a data race, and every resource is flat. Duplicates and failures with an error reply are counted and listed, not failed.
`

// spliceSoak writes r into the page at path: the section is created at the
// end if missing, and the block of r's mode replaced.
func spliceSoak(path string, r *soakResult) error {
	b, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		return err
	}
	page := string(b)
	if !strings.Contains(page, soakSectionTitle+"\n") {
		sb, se := soakBlock("single")
		cb, ce := soakBlock("cluster")
		page = strings.TrimRight(page, "\n") + "\n\n" + soakSectionTitle + "\n\n" + soakMethod + "\n" + sb + "\n" + se + "\n\n" + cb + "\n" + ce + "\n"
	}
	begin, end := soakBlock(r.Opts.Mode)
	i, j := strings.Index(page, begin), strings.Index(page, end)
	if i < 0 || j < i {
		return fmt.Errorf("%s: the %s block of the soak section is broken", path, r.Opts.Mode)
	}
	page = page[:i+len(begin)] + "\n" + r.markdown() + page[j:]
	return os.WriteFile(path, []byte(page), 0o644)
}

// keepSection carries the section called title of the page at path over
// into a freshly written page: the sections written by `go run ./bench
// soak` and `go run ./bench recall`, which `go run ./bench` does not run.
func keepSection(page, path, title string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return page
	}
	old := string(b)
	i := strings.Index(old, "\n"+title+"\n")
	if i < 0 {
		return page
	}
	sec := old[i+1:]
	if j := strings.Index(sec[len(title):], "\n## "); j >= 0 {
		sec = sec[:len(title)+j+1]
	}
	return strings.TrimRight(page, "\n") + "\n\n" + strings.TrimRight(sec, "\n") + "\n"
}

// spliceSection replaces the section called title of the page at path
// with body (from its title to the next "## " heading), or adds it at the
// end.
func spliceSection(path, title, body string) error {
	b, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		return err
	}
	page := string(b)
	sec := title + "\n\n" + strings.TrimRight(body, "\n") + "\n"
	i := strings.Index(page, "\n"+title+"\n")
	if i < 0 {
		page = strings.TrimRight(page, "\n") + "\n\n" + sec
	} else {
		rest := page[i+1+len(title):]
		end := ""
		if j := strings.Index(rest, "\n## "); j >= 0 {
			end = "\n" + rest[j+1:]
		}
		page = page[:i+1] + sec + end
	}
	return os.WriteFile(path, []byte(page), 0o644)
}
