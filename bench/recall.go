package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nanobot-go/nanobot/agent"
	"github.com/nanobot-go/nanobot/agent/session"
	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/configs"
	"github.com/nanobot-go/nanobot/providers"
	"github.com/nanobot-go/nanobot/tools"
	"github.com/nanobot-go/nanobot/tools/recall"
	"github.com/nanobot-go/nanobot/tools/recall/recalltest"
)

// The recall benchmark (`go run ./bench recall`, issue 39): facts planted
// in conversations among chatter, then asked for in new conversations.
//
// Quality: 300 facts in 80 conversations over 60 simulated days, 60
// questions; recall@5 of memory_search for words alone and for hybrid
// (with the test suite's trigram embedder, recalltest: a real embedding
// model knows synonyms and would change the hybrid figure), and the share
// of questions the agent answers from memory end to end, with a scripted
// model that calls memory_search and answers with its best hit.
//
// Speed: a search over 100,000 stored messages, p50 and p99, the time to
// build the index from nothing and to load it saved, its size on disk and
// in memory.
func recallMain(args []string) error {
	fs := flag.NewFlagSet("recall", flag.ContinueOnError)
	lines := fs.Int("lines", 100_000, "stored messages for the speed figures")
	queries := fs.Int("queries", 300, "searches timed for the speed figures")
	seed := fs.Uint64("seed", 39, "the corpus's random seed")
	out := fs.String("out", "", "also write the figures into this page's recall section (docs/benchmarks.md)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	log.SetFlags(log.Ltime)
	work, err := os.MkdirTemp("", "nanobot-recall-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)

	c := plantCorpus(*seed)
	log.Printf("quality: %d facts in %d conversations over 60 days, %d messages, %d questions", len(c.facts), 80, c.messages, len(c.asked))
	store, err := c.write(filepath.Join(work, "quality"))
	if err != nil {
		return err
	}
	ws := filepath.Join(work, "quality-ws")
	words1, words, err := recallAt(ws+"-words", store, c, nil)
	if err != nil {
		return err
	}
	emb := &recalltest.Embedder{}
	hybrid1, hybrid, err := recallAt(ws+"-hybrid", store, c, emb)
	if err != nil {
		return err
	}
	e2e, err := answeredFromMemory(ws+"-e2e", store, c)
	if err != nil {
		return err
	}
	var md strings.Builder
	fmt.Fprintf(&md, "<!-- Written by `go run ./bench recall -out docs/benchmarks.md` (bench/recall.go); `go run ./bench` keeps this section as it is. -->\n\n")
	fmt.Fprintf(&md, "`go run ./bench recall`, run on %s, %s: %d facts planted in 80 conversations over 60 simulated days among chatter and distractors naming the same people, places and things (%d messages), then %d of them asked in new conversations, worded as people ask. The hybrid row uses the test suite's trigram embedder (`tools/recall/recalltest`), which knows word forms, not meaning: a real embedding model would change it. See docs/memory.md.\n\n",
		time.Now().UTC().Format(time.DateOnly), describeMachine(), len(c.facts), c.messages, len(c.asked))
	fmt.Fprintf(&md, "| recall (%d questions) | first hit | in the first 5 |\n|---|---|---|\n", len(c.asked))
	fmt.Fprintf(&md, "| words (BM25) | %.0f %% | %.0f %% |\n", 100*words1, 100*words)
	fmt.Fprintf(&md, "| hybrid (BM25 + trigram test embedder) | %.0f %% | %.0f %% |\n", 100*hybrid1, 100*hybrid)
	fmt.Fprintf(&md, "| answered from memory end to end (the agent, a scripted model calling memory_search) | %.0f %% | |\n", 100*e2e)
	if err := recallSpeed(&md, filepath.Join(work, "speed"), *lines, *queries, *seed); err != nil {
		return err
	}
	fmt.Print("\n" + md.String())
	if *out != "" {
		return spliceSection(*out, recallSectionTitle, md.String())
	}
	return nil
}

// recallSectionTitle heads the recall benchmark's section of the page.
const recallSectionTitle = "## Recall: memory_search (issue 39)"

// fact is one planted fact: the message that states it, a question for
// it and the answer the question wants.
type fact struct {
	session, said, question, answer string
}

// corpus is the planted conversations.
type corpus struct {
	facts    []fact
	asked    []fact
	convs    map[string][]providers.Message
	messages int
}

var (
	benchFirst  = []string{"Ada", "Bruno", "Chiara", "Dmitri", "Elif", "Farid", "Greta", "Hiro", "Ines", "Jonas", "Kemal", "Lena", "Mateo", "Nadia", "Oskar", "Priya", "Quentin", "Rosa", "Samir", "Tove"}
	benchLast   = []string{"Okafor", "Lindqvist", "Moreau", "Tanaka", "Novak", "Haddad", "Ferreira", "Kowalski", "Byrne", "Rossi", "Yilmaz", "Singh", "Larsen", "Duarte", "Weber"}
	benchCities = []string{"Lisbon", "Kyoto", "Tallinn", "Porto", "Oslo", "Valencia", "Gdansk", "Trieste", "Bergen", "Ghent", "Lyon", "Bilbao", "Split", "Turku", "Aarhus"}
	benchThings = []string{"bike", "boat", "laptop", "camera", "piano", "tent", "kayak", "drone", "guitar", "scooter"}
	benchColour = []string{"red", "green", "blue", "yellow", "black", "white", "orange", "grey"}
	benchPlaces = []string{"cabin", "office", "studio", "workshop", "garage", "allotment", "boathouse", "attic"}
	benchMalls  = []string{"Riverside", "Northgate", "Harbour", "Eastfield", "Kingsway", "Meadowhall", "Westquay", "Parkside"}
	benchMonths = []string{"January", "March", "May", "June", "August", "September", "October", "December"}
	benchChat   = []string{
		"thanks, that helps", "can you summarise that article for me", "what's a good recipe for dinner tonight",
		"remind me what we discussed", "how do I convert a PDF to text", "is it going to rain later",
		"tell me a joke about programmers", "what does idempotent mean", "ok", "write a short poem about autumn",
		"how long should I boil an egg", "explain the difference between TCP and UDP", "good morning",
		"can you check my grammar in this sentence", "what time zone is Chicago in", "lol nice",
		"my cousin says hi", "the trip was fun", "I need to book a dentist appointment", "the garage door is stuck again",
		"what's your favourite city", "parking in town is a nightmare", "happy birthday to me soon", "the wifi is slow today",
	}
)

// person is a first and last name: each name is shared by many facts, the
// pair by one.
func person(r *rand.Rand) string { return pick(r, benchFirst) + " " + pick(r, benchLast) }

// templates give a fact's statement, its question (worded the way people
// ask, with other forms of the words) and its answer. Every anchor word
// recurs across facts; only their combination tells one fact from
// another.
var benchTemplates = []func(r *rand.Rand) fact{
	func(r *rand.Rand) fact {
		p, c := person(r), pick(r, benchCities)
		return fact{said: fmt.Sprintf("My cousin %s moved to %s last spring.", p, c), question: fmt.Sprintf("Where does my cousin %s live these days?", p), answer: c}
	},
	func(r *rand.Rand) fact {
		pl, c := pick(r, benchPlaces), pick(r, benchCities)
		code := fmt.Sprintf("%s-%04d", strings.ToLower(pick(r, benchCities)), r.IntN(10000))
		return fact{said: fmt.Sprintf("The wifi password at the %s in %s is %s", pl, c, code), question: fmt.Sprintf("what's the wireless password for the %s in %s?", pl, c), answer: code}
	},
	func(r *rand.Rand) fact {
		p, d := person(r), fmt.Sprintf("%d %s", 1+r.IntN(28), pick(r, benchMonths))
		return fact{said: fmt.Sprintf("%s was born on %s, don't let me forget the birthday", p, d), question: fmt.Sprintf("When is %s's birthday?", p), answer: d}
	},
	func(r *rand.Rand) fact {
		c, m, fl := pick(r, benchCities), pick(r, benchMonths), fmt.Sprintf("TP%d", 100+r.IntN(900))
		return fact{said: fmt.Sprintf("Booked the flights to %s for %s: %s, leaving at dawn.", c, m, fl), question: fmt.Sprintf("Which flight am I booking for the %s trip to %s?", m, c), answer: fl}
	},
	func(r *rand.Rand) fact {
		col, th, where := pick(r, benchColour), pick(r, benchThings), pick(r, benchPlaces)
		return fact{said: fmt.Sprintf("I'm keeping the %s %s in the %s over winter.", col, th, where), question: fmt.Sprintf("Where did I store my %s %ss?", col, th), answer: where}
	},
	func(r *rand.Rand) fact {
		mall, m, lvl := pick(r, benchMalls), pick(r, benchMonths), fmt.Sprintf("level %d", 1+r.IntN(9))
		return fact{said: fmt.Sprintf("Parked in the %s garage for the %s concert on %s, bay %d.", mall, m, lvl, r.IntN(300)), question: fmt.Sprintf("which level did I park on at %s for the %s concert?", mall, m), answer: lvl}
	},
}

// distractor is chatter that names the facts' anchors (people, places,
// things) without stating any fact about them.
func distractor(r *rand.Rand) string {
	switch r.IntN(6) {
	case 0:
		return fmt.Sprintf("%s says hello and asks about the birthday party", person(r))
	case 1:
		return fmt.Sprintf("went to %s for new shoes, the garage was full", pick(r, benchMalls))
	case 2:
		return fmt.Sprintf("%s looks lovely in %s, maybe a trip some day", pick(r, benchCities), pick(r, benchMonths))
	case 3:
		return fmt.Sprintf("my %s %s needs fixing before winter", pick(r, benchColour), pick(r, benchThings))
	case 4:
		return fmt.Sprintf("the wifi at the %s keeps dropping", pick(r, benchPlaces))
	default:
		return fmt.Sprintf("my cousin %s called about the flight", person(r))
	}
}

func pick[T any](r *rand.Rand, s []T) T { return s[r.IntN(len(s))] }

// plantCorpus builds 80 conversations over 60 days holding 300 facts.
func plantCorpus(seed uint64) *corpus {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	c := &corpus{convs: map[string][]providers.Message{}}
	start := time.Date(2026, 9, 1, 8, 0, 0, 0, time.UTC)
	keys := make([]string, 80)
	clock := make([]time.Time, 80)
	for i := range keys {
		keys[i] = fmt.Sprintf("telegram:%d", 1000+i)
		clock[i] = start.Add(time.Duration(r.IntN(60*24)) * time.Hour / 24 * 24)
	}
	say := func(i int, role, text string) {
		clock[i] = clock[i].Add(time.Duration(1+r.IntN(90)) * time.Minute)
		c.convs[keys[i]] = append(c.convs[keys[i]], providers.Message{Role: role, Content: text, Timestamp: clock[i].Format(time.RFC3339)})
		c.messages++
	}
	used := map[string]bool{}
	for n := range 300 {
		i := r.IntN(len(keys))
		for range 2 + r.IntN(6) {
			say(i, providers.RoleUser, pick(r, benchChat))
			say(i, providers.RoleAssistant, "Sure — "+pick(r, benchChat)+".")
			if r.IntN(2) == 0 {
				say(i, providers.RoleUser, distractor(r))
			}
		}
		f := benchTemplates[n%len(benchTemplates)](r)
		for used[f.question] {
			f = benchTemplates[n%len(benchTemplates)](r) // one fact per question
		}
		used[f.question] = true
		f.session = keys[i]
		say(i, providers.RoleUser, f.said)
		say(i, providers.RoleAssistant, "Noted.")
		c.facts = append(c.facts, f)
	}
	for _, j := range r.Perm(len(c.facts))[:60] {
		c.asked = append(c.asked, c.facts[j])
	}
	return c
}

// write stores the conversations in a session folder.
func (c *corpus) write(dir string) (*session.FileStore, error) {
	store, err := session.NewFileStore(dir, session.FileStoreOptions{NoSync: true})
	if err != nil {
		return nil, err
	}
	ctx := context.Background()
	for key, msgs := range c.convs {
		s, err := store.Load(ctx, key)
		if err != nil {
			return nil, err
		}
		if err := store.Append(ctx, s, msgs...); err != nil {
			return nil, err
		}
	}
	return store, nil
}

// recallAt is the share of questions whose planted message is the first
// hit, and among the first five.
func recallAt(ws string, store *session.FileStore, c *corpus, emb recall.Embedder) (at1, at5 float64, err error) {
	x := recall.NewIndex(recall.IndexOptions{Workspace: ws, Feed: agent.RecallFeed(store), Embedder: emb})
	defer x.Close()
	// Measure the steady state: everything indexed and embedded.
	for {
		if err := x.Refresh(context.Background()); err != nil {
			return 0, 0, err
		}
		if st := x.Stats(); emb == nil || st.Embedded == st.Pieces {
			break
		}
	}
	first, found := 0, 0
	for _, f := range c.asked {
		hits, _, err := x.Search(context.Background(), f.question, 5, recall.Scope{})
		if err != nil {
			return 0, 0, err
		}
		if slices.ContainsFunc(hits, func(h recall.Hit) bool { return h.Text == f.said }) {
			found++
		}
		if len(hits) > 0 && hits[0].Text == f.said {
			first++
		}
	}
	n := float64(len(c.asked))
	return float64(first) / n, float64(found) / n, nil
}

// scriptedRecaller is the end-to-end model: it calls memory_search with
// the question, then answers with the best hit that states something (a
// model reading the results passes over earlier questions, which hold no
// answer).
type scriptedRecaller struct{}

func (scriptedRecaller) Chat(ctx context.Context, req providers.ChatRequest) (*providers.LLMResponse, error) {
	last := req.Messages[len(req.Messages)-1]
	if last.Role == providers.RoleTool {
		answer := "I don't know."
		lines := strings.Split(last.Text(), "\n")
		for i, l := range lines {
			if strings.HasPrefix(l, "[conversation") || !strings.Contains(l, ". [") || i+1 >= len(lines) {
				continue
			}
			if hit := lines[i+1]; !strings.HasSuffix(strings.TrimSpace(hit), "?") {
				answer = "From memory: " + hit
				break
			}
		}
		return &providers.LLMResponse{Content: answer, FinishReason: providers.FinishStop}, nil
	}
	args, _ := json.Marshal(map[string]any{"query": last.Text(), "limit": 5})
	return &providers.LLMResponse{FinishReason: providers.FinishToolCalls, ToolCalls: []providers.ToolCallRequest{{
		ID: "c1", Name: "memory_search", RawArguments: string(args), Arguments: map[string]any{"query": last.Text(), "limit": 5.0},
	}}}, nil
}

func (s scriptedRecaller) Stream(ctx context.Context, req providers.ChatRequest, onDelta func(providers.Delta)) (*providers.LLMResponse, error) {
	return s.Chat(ctx, req)
}

// finals collects the agent's final answers.
type finals struct {
	mu  sync.Mutex
	got map[string]string
}

func (f *finals) PublishOutbound(_ context.Context, m bus.Outbound) error {
	if m.Final {
		f.mu.Lock()
		f.got[m.SessionKey] = m.Content
		f.mu.Unlock()
	}
	return nil
}

// answeredFromMemory asks each question in a new conversation of the
// owner, through the agent, and counts the answers that hold the fact.
func answeredFromMemory(ws string, store *session.FileStore, c *corpus) (float64, error) {
	cfg := configs.Default()
	cfg.Agents.Defaults.Workspace = ws
	paths := configs.PathsFor(filepath.Join(ws, "config.json"), &cfg)
	out := &finals{got: map[string]string{}}
	done := make(chan struct{}, len(c.asked))
	a, err := agent.New(&cfg, paths, agent.Deps{Provider: scriptedRecaller{}, Model: "scripted", Tools: tools.NewRegistry(), Store: store, Out: out,
		OnTurnDone: func(bus.Inbound, error) { done <- struct{}{} }})
	if err != nil {
		return 0, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = a.Run(ctx, nil) }()
	for i, f := range c.asked {
		a.Submit(ctx, bus.Inbound{Channel: "web", ChatID: fmt.Sprintf("q%d", i), SenderID: "owner", Admin: true, Content: f.question, MessageID: fmt.Sprint(i)})
	}
	for range c.asked {
		select {
		case <-done:
		case <-time.After(time.Minute):
			return 0, fmt.Errorf("the agent stopped answering")
		}
	}
	right := 0
	out.mu.Lock()
	defer out.mu.Unlock()
	for i, f := range c.asked {
		if strings.Contains(out.got[fmt.Sprintf("web:q%d", i)], f.answer) {
			right++
		}
	}
	return float64(right) / float64(len(c.asked)), nil
}

// recallSpeed times searches over lines stored messages.
func recallSpeed(md io.Writer, dir string, lines, queries int, seed uint64) error {
	r := rand.New(rand.NewPCG(seed, 7))
	store, err := session.NewFileStore(filepath.Join(dir, "sessions"), session.FileStoreOptions{NoSync: true})
	if err != nil {
		return err
	}
	ctx := context.Background()
	const convs = 500
	var probes []string
	began := time.Now()
	for i := range convs {
		s, err := store.Load(ctx, fmt.Sprintf("telegram:%d", i))
		if err != nil {
			return err
		}
		msgs := make([]providers.Message, 0, lines/convs)
		for j := range lines / convs {
			text := pick(r, benchChat)
			if j%7 == 0 {
				f := benchTemplates[j%len(benchTemplates)](r)
				text = f.said
				if len(probes) < 2*queries && r.IntN(10) == 0 {
					probes = append(probes, f.question)
				}
			}
			msgs = append(msgs, providers.Message{Role: providers.RoleUser, Content: text})
		}
		if err := store.Append(ctx, s, msgs...); err != nil {
			return err
		}
	}
	log.Printf("speed: %d messages in %d conversations written in %s", lines, convs, time.Since(began).Round(time.Millisecond))
	for _, mode := range []struct {
		name string
		emb  recall.Embedder
	}{{"words", nil}, {"hybrid (256-dim test embedder)", &recalltest.Embedder{}}} {
		ws := filepath.Join(dir, "ws-"+strings.Fields(mode.name)[0])
		heapBefore := heapInUse()
		x := recall.NewIndex(recall.IndexOptions{Workspace: ws, Feed: agent.RecallFeed(store), Embedder: mode.emb})
		t0 := time.Now()
		// The first search builds the index; with an embedder, each
		// refresh embeds at most 1024 pieces, so refresh until all are.
		for x.Stats().Embedded < x.Stats().Pieces || x.Stats().Pieces == 0 {
			if err := x.Refresh(ctx); err != nil {
				return err
			}
			if mode.emb == nil {
				break
			}
		}
		build := time.Since(t0)
		var took []time.Duration
		for i := range queries {
			q := probes[i%len(probes)]
			t := time.Now()
			if _, _, err := x.Search(ctx, q, 8, recall.Scope{}); err != nil {
				return err
			}
			took = append(took, time.Since(t))
		}
		if err := x.Close(); err != nil {
			return err
		}
		st := x.Stats()
		x = nil
		y := recall.NewIndex(recall.IndexOptions{Workspace: ws, Feed: agent.RecallFeed(store), Embedder: mode.emb})
		t1 := time.Now()
		if err := y.Refresh(ctx); err != nil {
			return err
		}
		load := time.Since(t1)
		heap := heapInUse() - heapBefore // x is garbage by now: this is y
		y.Close()
		slices.Sort(took)
		fmt.Fprintf(md, "\n| search, %s, %d messages in %d conversations | figure |\n|---|---|\n", mode.name, lines, convs)
		fmt.Fprintf(md, "| p50 / p99 of %d searches | %s / %s |\n", queries, ms(took[len(took)/2]), ms(took[len(took)*99/100]))
		fmt.Fprintf(md, "| index built from nothing | %s |\n", build.Round(time.Millisecond))
		fmt.Fprintf(md, "| saved index loaded (and checked against the files) | %s |\n", load.Round(time.Millisecond))
		fmt.Fprintf(md, "| on disk | %.1f MB |\n", float64(st.DiskBytes)/1e6)
		fmt.Fprintf(md, "| in memory while loaded (live Go heap) | %.1f MB |\n", float64(heap)/1e6)
		fmt.Fprintf(md, "| pieces / distinct terms | %d / %d |\n", st.Pieces, st.Terms)
	}
	return nil
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d.Microseconds())/1000) }

// heapInUse is the live heap after a collection.
func heapInUse() int64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}
