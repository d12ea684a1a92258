package main

import (
	"encoding/json"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/nanobot-go/nanobot/channels/telegram/telegramtest"
)

// replyFigures are issue 38's rows: how long a user waits for the first
// reply, from a gateway that is just starting and from one that runs.
type replyFigures struct {
	Name string // "nanobot" or the peer's name
	// Spawn → the first sendMessage answering a message that was waiting
	// in Telegram before the spawn, over Spawns restarts.
	Spawns                          int
	SpawnMedian, SpawnMin, SpawnMax time.Duration
	// The medians of its phases: spawn → the first Bot API call, that →
	// the first getUpdates, that → the first sendMessage.
	ToFirstCall, CallToPoll, PollToSend time.Duration
	// A running gateway, one message at a time in one chat: the update
	// handed out → the first sendMessage to that chat.
	Warm                int
	WarmMedian, WarmP99 time.Duration
	WarmMax             time.Duration
	// MemAt after the warm gateway's spawn (the messages answered by
	// then), its RSS and anonymous memory.
	MemAt        time.Duration
	RSS, AnonRSS int64
}

// replyChat is the chat the reply section talks in.
var replyChat = telegramtest.Chat{ID: 4242, Type: "private"}

// replyUser is who talks there.
var replyUser = telegramtest.User{ID: 4242, FirstName: "Ada", Username: "ada"}

// spawner starts one gateway against a Telegram fake; the state
// directory dir is kept between spawns (a restart, not a first install).
type spawner func(dir string, tg *telegramtest.Server) (*gateway, error)

// measureReply measures issue 38's rows for our gateway, for its slim
// build (every nanobot_omit_* tag; none when slim is "") and, when
// -baseline or -picoclaw name binaries, for those the same way in the same
// run. All talk to fakes at 0 ms (the model answers at once) and keep
// their state on the disk the bench's temporary folder is on. The spawns
// of the candidates take turns, so a change in the machine's load in the
// middle of the run weighs on each alike.
func measureReply(r *report, fx *fakes, bin, slim, work string, quick bool) error {
	spawns, warm := 15, 50
	if quick {
		spawns, warm = 2, 5
	}
	ours := func(bin string) spawner {
		return func(dir string, tg *telegramtest.Server) (*gateway, error) {
			return spawnGateway(bin, dir, fx, gwOptions{Telegram: tg, Defaults: true})
		}
	}
	cands := []*candidate{{name: "nanobot", spawn: ours(bin), dir: "reply-ours"}}
	if slim != "" {
		cands = append(cands, &candidate{name: slimName, spawn: ours(slim), dir: "reply-slim"})
	}
	if baselineBin != "" {
		cands = append(cands, &candidate{name: baselineName, spawn: ours(baselineBin), dir: "reply-baseline"})
	}
	if picoclawBin != "" {
		cands = append(cands, &candidate{name: "PicoClaw", dir: "reply-picoclaw", spawn: func(dir string, tg *telegramtest.Server) (*gateway, error) {
			return spawnPicoClaw(picoclawBin, dir, fx, tg)
		}})
	}
	for _, c := range cands {
		c.dir = filepath.Join(work, c.dir)
		if err := os.MkdirAll(c.dir, 0o700); err != nil {
			return err
		}
		// One bot per candidate for all its runs: Telegram never hands
		// out an update id twice, and a gateway rightly ignores one it
		// has already taken.
		c.tg = telegramtest.New(fx.t)
		defer c.tg.Close()
	}
	// The first spawn writes the workspace and is not counted: what a
	// user waits for after a restart or a rolling update is the rest.
	for i := range spawns + 1 {
		for _, c := range cands {
			ph, err := spawnToReply(c.spawn, c.tg, c.dir, i)
			if err != nil {
				return fmt.Errorf("%s: %w", c.name, err)
			}
			if i > 0 {
				c.times = append(c.times, ph.Reply)
				c.calls = append(c.calls, ph.FirstCall)
				c.polls = append(c.polls, ph.FirstPoll-ph.FirstCall)
				c.sends = append(c.sends, ph.Reply-ph.FirstPoll)
			}
		}
	}
	for _, c := range cands {
		f := replyFigures{Name: c.name, Spawns: spawns, Warm: warm}
		sort.Slice(c.times, func(i, j int) bool { return c.times[i] < c.times[j] })
		f.SpawnMin, f.SpawnMedian, f.SpawnMax = c.times[0], c.times[len(c.times)/2], c.times[len(c.times)-1]
		f.ToFirstCall, f.CallToPoll, f.PollToSend = percentile(c.calls, 0.5), percentile(c.polls, 0.5), percentile(c.sends, 0.5)
		f.MemAt = 10 * time.Second
		if quick {
			f.MemAt = 2 * time.Second
		}
		lat, mem, err := warmReplies(c.spawn, c.tg, c.dir, warm, f.MemAt)
		if err != nil {
			return fmt.Errorf("%s: %w", c.name, err)
		}
		f.RSS, f.AnonRSS = mem["Rss:"], mem["Anonymous:"]
		f.WarmMedian, f.WarmP99, f.WarmMax = percentile(lat, 0.5), percentile(lat, 0.99), lat[len(lat)-1]
		log.Printf("  %s: spawn → first reply median %s (min %s, max %s); warm update → first send median %s, p99 %s",
			c.name, round(f.SpawnMedian), round(f.SpawnMin), round(f.SpawnMax), round(f.WarmMedian), round(f.WarmP99))
		r.Reply = append(r.Reply, f)
	}
	return nil
}

// candidate is one gateway build the reply section measures.
type candidate struct {
	name  string
	spawn spawner
	dir   string
	tg    *telegramtest.Server
	times []time.Duration
	// calls, polls and sends are each restart's phases: spawn → first
	// Bot API call, that → first getUpdates, that → first sendMessage.
	calls, polls, sends []time.Duration
}

// slimName heads the column of the build with every nanobot_omit_* tag.
const slimName = "nanobot, optional platforms left out"

// picoclawBin is the -picoclaw flag: a PicoClaw binary to measure beside ours.
var picoclawBin string

// baselineBin is the -baseline flag: another build of ours (an earlier
// commit) measured the same way in the same run, so a change is judged
// against the machine's state of the moment.
var baselineBin string

// baselineName is the -baseline-name flag: its column's heading.
var baselineName string

// startPhases split a spawn → first reply, as the platform sees it.
type startPhases struct {
	// Reply is the spawn → the first sendMessage in the chat; FirstCall
	// the spawn → the first Bot API call (the process started and
	// assembled); FirstPoll the spawn → the first getUpdates, which hands
	// out the waiting message at once.
	Reply, FirstCall, FirstPoll time.Duration
}

// spawnToReply puts a message in the Telegram fake while no gateway
// polls it, spawns the gateway and returns the time from the spawn to the
// bot's first sendMessage in that chat, with its phases. It stops the
// gateway once the answer is complete.
func spawnToReply(spawn spawner, tg *telegramtest.Server, dir string, i int) (startPhases, error) {
	_, seen := tg.SentSince(1 << 62)
	token := fmt.Sprintf("m-38-%d", i)
	tg.Send(telegramtest.Msg{Chat: replyChat, From: replyUser, Text: "hello " + token})
	g, err := spawn(dir, tg)
	if err != nil {
		return startPhases{}, err
	}
	defer g.stop()
	calls := len(tg.Calls(""))
	at, err := firstSend(tg, g, seen, 30*time.Second)
	if err != nil {
		return startPhases{}, err
	}
	ph := startPhases{Reply: at.Sub(g.started)}
	for _, c := range tg.Calls("")[calls:] {
		if c.At.After(at) {
			break
		}
		if ph.FirstCall == 0 {
			ph.FirstCall = c.At.Sub(g.started)
		}
		if c.Method == "getUpdates" && ph.FirstPoll == 0 {
			ph.FirstPoll = c.At.Sub(g.started)
		}
		if os.Getenv("NANOBOT_BENCH_TIMELINE") != "" {
			log.Printf("    %6.1f ms  %s", float64(c.At.Sub(g.started).Microseconds())/1000, c.Method)
		}
	}
	return ph, waitSent(tg, g, seen, token, 30*time.Second)
}

// warmReplies starts the gateway, answers one message to warm it, then
// sends n messages one at a time and returns the time from each update to
// the first sendMessage in the chat, sorted, and the gateway's memory
// (smaps_rollup) memAt after its spawn.
func warmReplies(spawn spawner, tg *telegramtest.Server, dir string, n int, memAt time.Duration) ([]time.Duration, map[string]int64, error) {
	g, err := spawn(dir, tg)
	if err != nil {
		return nil, nil, err
	}
	defer g.stop()
	var lat []time.Duration
	for i := range n + 1 {
		_, seen := tg.SentSince(1 << 62)
		token := fmt.Sprintf("m-39-%d", i)
		sent := time.Now()
		tg.Send(telegramtest.Msg{Chat: replyChat, From: replyUser, Text: "tell me " + token})
		at, err := firstSend(tg, g, seen, 30*time.Second)
		if err != nil {
			return nil, nil, err
		}
		if i > 0 {
			lat = append(lat, at.Sub(sent))
		}
		// The next message goes once this one is answered in full and
		// the bot is idle again (a user reading the answer).
		if err := waitSent(tg, g, seen, token, 30*time.Second); err != nil {
			return nil, nil, err
		}
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	if wait := time.Until(g.started.Add(memAt)); wait < 0 {
		log.Printf("  warning: the messages took longer than %s; memory read late", memAt)
	} else {
		time.Sleep(wait)
	}
	mem, err := g.smaps()
	return lat, mem, err
}

// firstSend waits for the first sendMessage to replyChat after the first
// seen sends and returns when the fake received it.
func firstSend(tg *telegramtest.Server, g *gateway, seen int, timeout time.Duration) (time.Time, error) {
	var at time.Time
	err := pollSent(tg, g, seen, timeout, func(s telegramtest.Sent) bool {
		if s.Method == "sendMessage" && s.ChatID == replyChat.ID {
			at = s.At
			return true
		}
		return false
	})
	return at, err
}

// waitSent waits until something the bot sent or edited in replyChat after
// the first seen sends shows token.
func waitSent(tg *telegramtest.Server, g *gateway, seen int, token string, timeout time.Duration) error {
	return pollSent(tg, g, seen, timeout, func(s telegramtest.Sent) bool {
		return s.ChatID == replyChat.ID && strings.Contains(s.Visible, token)
	})
}

// pollSent polls the fake's sends after the first seen until match is
// true for one, the gateway exits, or timeout passes. The times compared
// are the fake's own, so the polling interval adds nothing to them.
func pollSent(tg *telegramtest.Server, g *gateway, seen int, timeout time.Duration, match func(telegramtest.Sent) bool) error {
	deadline := time.Now().Add(timeout)
	for {
		var sent []telegramtest.Sent
		sent, seen = tg.SentSince(seen)
		for _, s := range sent {
			if match(s) {
				return nil
			}
		}
		select {
		case err := <-g.done:
			g.done <- err // stop() waits for it too
			return fmt.Errorf("gateway exited: %v (log: %s)", err, filepath.Join(g.dir, "gateway.log"))
		case <-time.After(200 * time.Microsecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no reply after %s (log: %s)", timeout, filepath.Join(g.dir, "gateway.log"))
		}
	}
}

// spawnPicoClaw starts PicoClaw's gateway on the same fakes, on its
// defaults otherwise: one model entry pointing at the LLM fake, Telegram
// on tg, heartbeat off (as ours is in the bench).
func spawnPicoClaw(bin, dir string, fx *fakes, tg *telegramtest.Server) (*gateway, error) {
	home := filepath.Join(dir, ".picoclaw")
	if err := os.MkdirAll(home, 0o700); err != nil {
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	cfg := map[string]any{
		"version": 3,
		"agents":  map[string]any{"defaults": map[string]any{"workspace": filepath.Join(home, "workspace"), "model_name": "bench-model"}},
		"model_list": []any{map[string]any{
			"model_name": "bench-model", "model": "openai/bench-model",
			"api_keys": []string{"bench-key"}, "api_base": fx.llm.OpenAIBase(),
		}},
		"channel_list": map[string]any{"telegram": map[string]any{
			"enabled": true, "type": "telegram", "allow_from": []string{},
			"settings": map[string]any{"token": telegramtest.Token, "base_url": strings.TrimSuffix(tg.URL, "/")},
		}},
		"gateway":   map[string]any{"host": "127.0.0.1", "port": port},
		"heartbeat": map[string]any{"enabled": false},
	}
	b, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(home, "config.json"), b, 0o600); err != nil {
		return nil, err
	}
	env := []string{"HOME=" + dir, "PICOCLAW_HOME=" + home, "PATH=" + os.Getenv("PATH"), "TZ=UTC"}
	return spawnProcess(dir, fmt.Sprintf("127.0.0.1:%d", port), env, bin, "gateway")
}

// replyMarkdown writes issue 38's table.
func (r *report) replyMarkdown(w func(string, ...any)) {
	if len(r.Reply) == 0 {
		return
	}
	w("\n## First reply and per-message latency (issue 38)\n\n")
	w("Each gateway on its defaults with only Telegram enabled, against the Telegram fake and the LLM fake answering at once (0 ms), its state on the disk of the bench's temporary folder (journal and outbox included). ")
	w("*Spawn → first reply*: a message waits in the Telegram fake while no gateway polls it; the gateway is spawned on a state folder it has started on before (a restart); the time from `exec` to the fake receiving the first `sendMessage` in that chat; %d restarts. ", r.Reply[0].Spawns)
	w("*Warm*: one running gateway, one message at a time in one chat (the next once the answer is complete); the time from the update being handed out (the gateway is in its long poll) to the fake receiving the first `sendMessage` in the chat; %d messages after one to warm up. ", r.Reply[0].Warm)
	w("Times are the fake's own receive times. *Memory*: `Rss:` and `Anonymous:` of `/proc/<pid>/smaps_rollup` of that warm gateway %s after its spawn. ", r.Reply[0].MemAt)
	w("Each gateway on its defaults: ours returns the start's garbage to the OS and unmaps its code pages once idle 3 s after the start (`gateway.trimCodePages`), PicoClaw does nothing of the kind.\n\n")
	w("| figure |")
	for _, f := range r.Reply {
		w(" %s |", f.Name)
	}
	w(" goal |\n|---|")
	for range r.Reply {
		w("---|")
	}
	w("---|\n")
	row := func(what, goal string, v func(replyFigures) string) {
		w("| %s |", what)
		for _, f := range r.Reply {
			w(" %s |", v(f))
		}
		w(" %s |\n", goal)
	}
	row("spawn → first reply, median (min–max)", "≤ 90 ms", func(f replyFigures) string {
		return fmt.Sprintf("%s (%s–%s)", round(f.SpawnMedian), round(f.SpawnMin), round(f.SpawnMax))
	})
	row("… spawn → first Bot API call (process start, assembly), median", "", func(f replyFigures) string { return round(f.ToFirstCall).String() })
	row("… first call → first `getUpdates` (connect), median", "", func(f replyFigures) string { return round(f.CallToPoll).String() })
	row("… first `getUpdates` → first `sendMessage` (the first turn), median", "", func(f replyFigures) string { return round(f.PollToSend).String() })
	row("warm update → first send, median", "≤ 20 ms", func(f replyFigures) string { return round(f.WarmMedian).String() })
	row("warm update → first send, p99 (max)", "≤ 40 ms", func(f replyFigures) string {
		return fmt.Sprintf("%s (%s)", round(f.WarmP99), round(f.WarmMax))
	})
	mb := func(b int64) string { return fmt.Sprintf("%.1f MB", float64(b)/1e6) }
	row(fmt.Sprintf("RSS %s after start (the warm gateway, its messages answered)", r.Reply[0].MemAt), "≤ 28 MB", func(f replyFigures) string { return mb(f.RSS) })
	row(fmt.Sprintf("anonymous RSS %s after start", r.Reply[0].MemAt), "≤ 7 MB", func(f replyFigures) string { return mb(f.AnonRSS) })
}

// replyGapMarkdown explains issue 38's rows: where the time of a first
// reply goes and what was changed. The figures in it were measured by
// hand on this machine with the tools this driver offers (-baseline,
// NANOBOT_BENCH_WRAP with perf, NANOBOT_BENCH_TIMELINE, GODEBUG=inittrace=1)
// and with in-process marks that are not kept in the code.
func (r *report) replyGapMarkdown(w func(string, ...any)) {
	if len(r.Reply) == 0 {
		return
	}
	w("\n### Where the milliseconds of a first reply go (issue 38)\n\n")
	w("- **Spawn → first Bot API call** is the process start and the assembly. About 45 ms of it is the Go runtime and the package initialisers of 326 packages, before `main` runs (`GODEBUG=inittrace=1`: 28 ms of initialiser CPU; goldmark 4.2 ms, mautrix 4.0 ms — its server-name regexp with `{1,255}` repeats is 4.9 ms alone — whatsmeow's protobufs 4.0 ms, the standard library 3.4 ms, ours 1.9 ms). `main` to the channels running is about 12 ms: loading the config 2.8 ms, the journal and outbox 1.4 ms, the agent 0.9 ms, the rest under 1 ms each.\n")
	w("- **First call → first `getUpdates`**: `getMe`, `setMyCommands` and `deleteWebhook` go out at once and the poll starts when all three have answered (a poll fails while a webhook is set, and the bot's username is needed to read group mentions); PicoClaw polls first.\n")
	w("- **First `getUpdates` → first `sendMessage`** is the first turn: the update journalled (fsynced) before it is acknowledged, the session file created, the system prompt built (workspace files, skills, PATH searches), the first request to the model on a new connection, the reply through the outbox; about three times a warm turn, since every step runs its code for the first time. PicoClaw sends `sendChatAction` and its reply about 20 ms later, also warm.\n")
	w("- **Changed for issue 38** (each measured against the commit before it with `-baseline`, in turns): the exec sandbox is described in the log 2 s after the start instead of before it — the probe runs a confined child that re-executes the binary, about 50 ms of CPU on two cores during the start (spawn → first reply about 100 ms → 74 ms, `/readyz` about 94 ms → 56 ms); the journal and outbox compact at open only when damaged or far over their live records (they rewrote and fsynced the file at every start: about 13 ms); usage files are read with buffers of their size (a 4 MiB buffer per start); the built-in tools' schemas compile at their first call (about 5 ms; a test compiles all of them); the skills are scanned once per prompt, PATH searches are kept while PATH's folders are unchanged (looked at every 2 s), and the system prompt is reused while its files are unchanged (a stat each, never within a second of a write) — `BenchmarkInboundToReply` (the whole gateway in one process, one message at a time) went from 1.49 ms, 187 KB and 887 allocations per message to 1.0 ms, 123 KB and 420; the start's garbage and code pages go back to the OS once idle 3 s after the start.\n")
	w("- **Not reproduced**: the issue measured the warm figure at 58–62 ms for ours and 28–29 ms for PicoClaw with another harness. On this one the commit before this work answered in 4.7–5.8 ms and PicoClaw in 49–50 ms; the table above is this harness's.\n")
	w("- **Left**: the journal's fsync stays before the platform's acknowledgement and before the turn (the model call could start beside it and only the acknowledgement wait; at about 0.2 ms per fsync here it was not worth the reordering); the initialisers of the linked libraries (fewer packages, or libraries without regexps and tables built at init, would close most of the gap to PicoClaw's start). The column of the build with every `nanobot_omit_*` tag shows what leaving platforms out buys: the start skips the initialisers of whatsmeow, mautrix and the other adapters' libraries, and the anonymous memory and mapped code shrink with them; the rest of the anonymous memory is the Go heap of what every build has (goldmark, the agent, the tools, the workbench) and the runtime.\n")
}
