package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/nanobot-go/nanobot/providers/providertest"
)

// soakMarkerRe finds the sequence markers of the soak's users in a model
// request: soak-<chat>-<n> from a chat, api-<client>-<n> from an API client.
var soakMarkerRe = regexp.MustCompile(`(soak|api)-(\d+)-(\d+)`)

// soakModel is the scripted model of the soak. It answers every request
// with the markers of the user messages it has not answered yet (those
// after the last assistant message), each in brackets at the end of the
// answer, so a reply names exactly the messages it answers and a partial
// stream never shows a whole marker. While faults are on, a share of the
// requests fail or stall:
//
//   - "500" and "503" (with Retry-After: 1): the provider retries them;
//   - "stall-first-byte": headers, then nothing until the gateway's stream
//     idle timeout gives up and retries (no text was shown yet);
//   - "slow": a live stream that takes several seconds (a target for
//     /stop and for API clients that leave);
//   - "hang": part of the answer, then nothing (chats only): the driver
//     is told and sends /stop; if that does not land first, the idle
//     timeout ends the turn with an error reply, which the ledger matches.
//
// A request gets at most two retryable faults per marker, fewer than the
// provider's three retries, so every failure a user sees is either a hang
// or the gateway's own.
type soakModel struct {
	mu        sync.Mutex
	rng       *rand.Rand
	share     float64 // share of requests that get a fault while faults are on
	on        bool
	retryable map[string]int      // marker -> retryable faults given
	hung      map[string]bool     // markers the model hung on mid-answer
	busyUntil map[int64]time.Time // chat -> when its current answer should end
	counts    map[string]int      // faults given, by kind
	requests  int                 // requests with markers
	hangs     chan int64          // chats whose answer hangs, for the /stop sender
	idle      time.Duration       // the gateway's stream idle timeout
}

func newSoakModel(seed uint64, share float64, idle time.Duration) *soakModel {
	return &soakModel{
		rng: rand.New(rand.NewPCG(seed, 1)), share: share, retryable: map[string]int{}, hung: map[string]bool{},
		busyUntil: map[int64]time.Time{}, counts: map[string]int{}, hangs: make(chan int64, 64), idle: idle,
	}
}

// setFaults switches the faults on or off.
func (m *soakModel) setFaults(on bool) {
	m.mu.Lock()
	m.on = on
	m.mu.Unlock()
}

// hungOn reports whether the model hung mid-answer on marker.
func (m *soakModel) hungOn(marker string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.hung[marker]
}

// busyChats are the chats whose answer is still streaming.
func (m *soakModel) busyChats() []int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := time.Now()
	var out []int64
	for c, until := range m.busyUntil {
		if until.After(now.Add(300 * time.Millisecond)) {
			out = append(out, c)
		}
	}
	return out
}

// faultCounts returns the faults given so far, by kind.
func (m *soakModel) faultCounts() (map[string]int, int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(map[string]int, len(m.counts))
	for k, v := range m.counts {
		out[k] = v
	}
	return out, m.requests
}

func (m *soakModel) reply(r providertest.Request) providertest.Reply {
	if hasTool(r.Body, "save_memory") {
		// Memory consolidation: a usable save_memory call, markers left out.
		return providertest.Reply{ToolCalls: []providertest.ToolCall{{Name: "save_memory",
			Arguments: `{"history_entry":"[2026-01-01 00:00] A soak conversation.","memory_update":"# Memory\n"}`}}}
	}
	markers := unansweredMarkers(r.Body)
	if len(markers) == 0 {
		return providertest.Reply{Text: "ok"}
	}
	var b strings.Builder
	b.WriteString("Here is the answer to what you asked, in a few words:")
	for _, mk := range markers {
		b.WriteString(" [" + mk + "]")
	}
	key := markers[len(markers)-1]
	sm := soakMarkerRe.FindStringSubmatch(key)
	chat := int64(0)
	if sm[1] == "soak" {
		chat, _ = strconv.ParseInt(sm[2], 10, 64)
	}

	m.mu.Lock()
	defer m.mu.Unlock()
	m.requests++
	reply := providertest.Reply{Text: b.String(), Chunks: 5, Delay: time.Duration(20+m.rng.IntN(180)) * time.Millisecond}
	if chat == 0 {
		// API answers stream slowly enough for a client to leave mid-way.
		reply.EventDelay = time.Duration(100+m.rng.IntN(200)) * time.Millisecond
	}
	kind := ""
	if m.on && m.rng.Float64() < m.share {
		kinds := []string{"500", "503", "stall-first-byte", "slow"}
		if chat != 0 {
			kinds = append(kinds, "hang")
		}
		kind = kinds[m.rng.IntN(len(kinds))]
		if (kind == "500" || kind == "503" || kind == "stall-first-byte") && m.retryable[key] >= 2 {
			kind = "slow"
		}
	} else if chat != 0 && m.rng.Float64() < 0.1 {
		reply.EventDelay = time.Duration(300+m.rng.IntN(500)) * time.Millisecond // plain slow answers: something to /stop
	}
	switch kind {
	case "500":
		reply.Status = http.StatusInternalServerError
		m.retryable[key]++
	case "503":
		reply.Status, reply.RetryAfter = http.StatusServiceUnavailable, "1"
		m.retryable[key]++
	case "stall-first-byte":
		reply.StallAfter = 1 // the role chunk only: no text shown, so the provider retries
		m.retryable[key]++
	case "slow":
		reply.EventDelay = time.Duration(800+m.rng.IntN(1200)) * time.Millisecond
	case "hang":
		reply.StallAfter = 3 // two pieces of text, then nothing
		m.hung[key] = true
	}
	if kind != "" {
		m.counts[kind]++
	}
	if chat != 0 {
		end := time.Now().Add(reply.Delay + 8*reply.EventDelay)
		if kind == "hang" || kind == "stall-first-byte" {
			end = time.Now().Add(m.idle)
		}
		m.busyUntil[chat] = end
		if kind == "hang" {
			select {
			case m.hangs <- chat:
			default:
			}
		}
	}
	return reply
}

// hasTool reports whether the request offers a function tool named name.
func hasTool(body map[string]any, name string) bool {
	tools, _ := body["tools"].([]any)
	for _, t := range tools {
		tm, _ := t.(map[string]any)
		fn, _ := tm["function"].(map[string]any)
		if fn["name"] == name {
			return true
		}
	}
	return false
}

// unansweredMarkers are the markers of the user messages after the last
// assistant message of the request, in order, each once.
func unansweredMarkers(body map[string]any) []string {
	msgs, _ := body["messages"].([]any)
	start := 0
	for i, raw := range msgs {
		if m, _ := raw.(map[string]any); m["role"] == "assistant" {
			start = i + 1
		}
	}
	var out []string
	seen := map[string]bool{}
	for _, raw := range msgs[start:] {
		m, _ := raw.(map[string]any)
		if m["role"] != "user" {
			continue
		}
		b, _ := json.Marshal(m["content"])
		for _, mk := range soakMarkerRe.FindAllString(string(b), -1) {
			if !seen[mk] {
				seen[mk] = true
				out = append(out, mk)
			}
		}
	}
	return out
}

// platformProxy sits between the gateway and the Telegram fake and plays
// the platform's bad days: an outage (every connection, long polls in
// flight included, is cut) and rate limiting (sends answered 429 with
// retry_after and a Retry-After header, as Telegram does).
type platformProxy struct {
	srv *httptest.Server
	rp  *httputil.ReverseProxy

	mu         sync.Mutex
	down       bool
	limited    bool
	retryAfter int
	gen        context.Context // cancelled when an outage starts
	cut        context.CancelFunc
	refused    int // requests cut during outages
	limitedN   int // requests answered 429
}

func newPlatformProxy(target string) (*platformProxy, error) {
	u, err := url.Parse(target)
	if err != nil {
		return nil, err
	}
	p := &platformProxy{rp: httputil.NewSingleHostReverseProxy(u)}
	p.gen, p.cut = context.WithCancel(context.Background())
	// A cut upstream request breaks the client's connection too, as a
	// network failure would, instead of answering 502.
	p.rp.ErrorHandler = func(http.ResponseWriter, *http.Request, error) { panic(http.ErrAbortHandler) }
	p.rp.ErrorLog = discardLogger()
	p.srv = httptest.NewUnstartedServer(p)
	p.srv.Config.ErrorLog = discardLogger()
	p.srv.Start()
	return p, nil
}

func (p *platformProxy) URL() string { return p.srv.URL }

func (p *platformProxy) close() {
	p.setDown(false)
	p.cut()
	p.srv.CloseClientConnections()
	p.srv.Close()
}

// setDown starts or ends an outage.
func (p *platformProxy) setDown(down bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if down && !p.down {
		p.cut()
		p.gen, p.cut = context.WithCancel(context.Background())
	}
	p.down = down
}

// setLimited starts (retryAfter > 0) or ends rate limiting of sends.
func (p *platformProxy) setLimited(retryAfter int) {
	p.mu.Lock()
	p.limited, p.retryAfter = retryAfter > 0, retryAfter
	p.mu.Unlock()
}

func (p *platformProxy) counts() (refused, limited int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.refused, p.limitedN
}

func (p *platformProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	method := r.URL.Path[strings.LastIndex(r.URL.Path, "/")+1:]
	p.mu.Lock()
	down, limited, retryAfter, gen := p.down, p.limited && isSend(method), p.retryAfter, p.gen
	switch {
	case down:
		p.refused++
	case limited:
		p.limitedN++
	}
	p.mu.Unlock()
	if down {
		panic(http.ErrAbortHandler)
	}
	if limited {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Retry-After", strconv.Itoa(retryAfter))
		w.WriteHeader(http.StatusTooManyRequests)
		_, _ = fmt.Fprintf(w, `{"ok":false,"error_code":429,"description":"Too Many Requests: retry after %d","parameters":{"retry_after":%d}}`, retryAfter, retryAfter)
		return
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	defer context.AfterFunc(gen, cancel)()
	p.rp.ServeHTTP(w, r.WithContext(ctx))
}

// isSend reports whether a Bot API method sends or changes a message (what
// Telegram rate-limits).
func isSend(method string) bool {
	switch method {
	case "sendMessage", "editMessageText", "sendChatAction", "sendPhoto", "sendDocument", "sendVoice", "sendAudio", "setMessageReaction":
		return true
	}
	return false
}

// natsServer is an embedded NATS server with JetStream on a fixed
// loopback port and store, so it can be restarted under its clients.
type natsServer struct {
	dir  string
	port int

	mu  sync.Mutex
	srv *server.Server
}

func startNATS(dir string) (*natsServer, error) {
	s := &natsServer{dir: dir, port: -1}
	return s, s.start()
}

func (s *natsServer) start() error {
	opts := &server.Options{Host: "127.0.0.1", Port: s.port, JetStream: true, StoreDir: s.dir, NoLog: true, NoSigs: true, ServerName: "nanobot-soak"}
	var srv *server.Server
	var err error
	// The old listener may take a moment to let go of the port.
	for range 50 {
		if srv, err = server.NewServer(opts); err != nil {
			return fmt.Errorf("nats: %w", err)
		}
		go srv.Start()
		if srv.ReadyForConnections(10 * time.Second) {
			break
		}
		srv.Shutdown()
		srv = nil
		time.Sleep(100 * time.Millisecond)
	}
	if srv == nil {
		return errors.New("nats: server not ready")
	}
	s.port = srv.Addr().(*net.TCPAddr).Port
	s.mu.Lock()
	s.srv = srv
	s.mu.Unlock()
	return nil
}

func (s *natsServer) URL() string { return "nats://127.0.0.1:" + strconv.Itoa(s.port) }

func (s *natsServer) stop() {
	s.mu.Lock()
	srv := s.srv
	s.srv = nil
	s.mu.Unlock()
	if srv != nil {
		srv.Shutdown()
		srv.WaitForShutdown()
	}
}

// scratchDisk is a small tmpfs holding the gateway's home, which the
// driver can fill up (a full disk) and free again.
type scratchDisk struct {
	dir     string
	ballast string
}

// mountScratch mounts a tmpfs of size bytes at dir; it fails where the
// process may not mount (not root, no CAP_SYS_ADMIN).
func mountScratch(dir string, size int64) (*scratchDisk, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV, fmt.Sprintf("size=%d,mode=0700", size)); err != nil {
		return nil, fmt.Errorf("mount tmpfs: %w", err)
	}
	return &scratchDisk{dir: dir, ballast: filepath.Join(dir, "soak-ballast")}, nil
}

// fill writes a ballast file until the disk is full.
func (d *scratchDisk) fill() error {
	f, err := os.OpenFile(d.ballast, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer f.Close()
	buf := make([]byte, 1<<20)
	for {
		if _, err := f.Write(buf); err != nil {
			if errors.Is(err, syscall.ENOSPC) {
				return nil
			}
			return err
		}
	}
}

// free removes the ballast.
func (d *scratchDisk) free() error { return os.Remove(d.ballast) }

// unmount frees and unmounts the disk (lazily, if a file is still open).
func (d *scratchDisk) unmount() error {
	_ = os.Remove(d.ballast)
	return syscall.Unmount(d.dir, syscall.MNT_DETACH)
}

// discardLogger swallows the HTTP servers' own complaints (aborted
// connections are the point of the proxy).
func discardLogger() *log.Logger { return log.New(io.Discard, "", 0) }
