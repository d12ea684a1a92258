package matrix

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
	"maunium.net/go/mautrix"
	"maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/id"

	"github.com/nanobot-go/nanobot/channels"
	"github.com/nanobot-go/nanobot/channels/channeltest"
	"github.com/nanobot-go/nanobot/channels/matrix/matrixtest"
	"github.com/nanobot-go/nanobot/configs"
	"github.com/nanobot-go/nanobot/internal/testproc"
)

// One Dendrite serves all the package's tests (it starts in about a
// second; each test registers users of its own).
var (
	srv    *matrixtest.Server
	srvErr error
)

func TestMain(m *testing.M) {
	var stop func()
	srv, stop, srvErr = matrixtest.Launch()
	code := m.Run()
	if stop != nil {
		stop()
	}
	// Like goleak.VerifyTestMain: a goroutine that outlives the tests is
	// a loop that did not stop with its context.
	if err := goleak.Find(
		// mautrix sleeps out each verification request's 10-minute expiry.
		goleak.IgnoreAnyFunction("maunium.net/go/mautrix/crypto/verificationhelper.(*VerificationHelper).expireTransactionAt.func1"),
	); code == 0 && err != nil {
		fmt.Fprintln(os.Stderr, "goleak:", err)
		code = 1
	}
	os.Exit(code)
}

// homeserver returns the package's Dendrite, or skips (fails under CI)
// when it could not start.
func homeserver(t *testing.T) *matrixtest.Server {
	t.Helper()
	if srvErr != nil {
		if errors.Is(srvErr, matrixtest.ErrNotInstalled) {
			testproc.Missing(t, "%v", srvErr)
		}
		t.Fatal(srvErr)
	}
	return srv
}

// world is a bot with a direct room per test user and a group room.
type world struct {
	srv            *matrixtest.Server
	bot            *matrixtest.User
	alice, mallory *matrixtest.User
	dm             map[string]id.RoomID // test user -> direct room
	group          id.RoomID
	rooms          []id.RoomID
	rec            *sendRecorder
}

func newWorld(t *testing.T, s *matrixtest.Server) *world {
	t.Helper()
	ctx := context.Background()
	w := &world{srv: s, bot: s.Register(t, "bot"), alice: s.Register(t, "alice"), mallory: s.Register(t, "mallory"), dm: map[string]id.RoomID{}}
	for name, u := range map[string]*matrixtest.User{channeltest.Alice: w.alice, channeltest.Mallory: w.mallory} {
		room, err := u.CreateRoom(ctx, &mautrix.ReqCreateRoom{Preset: "trusted_private_chat", IsDirect: true, Invite: []id.UserID{w.bot.ID}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.bot.JoinRoomByID(ctx, room.RoomID); err != nil {
			t.Fatal(err)
		}
		w.dm[name] = room.RoomID
		w.rooms = append(w.rooms, room.RoomID)
	}
	room, err := w.alice.CreateRoom(ctx, &mautrix.ReqCreateRoom{Preset: "public_chat", Name: "group", Invite: []id.UserID{w.bot.ID, w.mallory.ID}})
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range []*matrixtest.User{w.bot, w.mallory} {
		if _, err := u.JoinRoomByID(ctx, room.RoomID); err != nil {
			t.Fatal(err)
		}
	}
	w.group = room.RoomID
	w.rooms = append(w.rooms, room.RoomID)
	return w
}

// seedSyncToken saves the bot's current sync position where the channel
// keeps it, as if the bot had run before: nothing counts as backlog.
func (w *world) seedSyncToken(t *testing.T, stateDir string) {
	t.Helper()
	resp, err := w.bot.FullSyncRequest(context.Background(), mautrix.ReqSync{Timeout: 0})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(syncState{User: string(w.bot.ID), NextBatch: resp.NextBatch})
	if err := os.WriteFile(filepath.Join(stateDir, "matrix-sync.json"), b, 0o600); err != nil {
		t.Fatal(err)
	}
}

func (w *world) user(name string) *matrixtest.User {
	if name == channeltest.Mallory {
		return w.mallory
	}
	return w.alice
}

// say sends a text message as u into room and returns its event id.
func say(t *testing.T, u *matrixtest.User, room id.RoomID, content *event.MessageEventContent) id.EventID {
	t.Helper()
	resp, err := u.SendMessageEvent(context.Background(), room, event.EventMessage, content)
	if err != nil {
		t.Fatalf("send as %s: %v", u.ID, err)
	}
	return resp.EventID
}

// sendRecorder notes the ids of the events the channel sent, so that sent
// can wait for the homeserver's read side (which trails its write side a
// little in Dendrite) to show all of them.
type sendRecorder struct {
	next http.RoundTripper
	mu   sync.Mutex
	ids  []string
}

func (r *sendRecorder) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := r.next.RoundTrip(req)
	if err != nil || req.Method != http.MethodPut || !strings.Contains(req.URL.Path, "/send/") || resp.StatusCode != http.StatusOK {
		return resp, err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(body))
	var v struct {
		EventID string `json:"event_id"`
	}
	if err == nil && json.Unmarshal(body, &v) == nil && v.EventID != "" {
		r.mu.Lock()
		r.ids = append(r.ids, v.EventID)
		r.mu.Unlock()
	}
	return resp, nil
}

// CloseIdleConnections passes through, so the channel's shutdown closes
// its connections as it would without the recorder.
func (r *sendRecorder) CloseIdleConnections() {
	if c, ok := r.next.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

func (r *sendRecorder) sent() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.ids...)
}

// record makes w.sent wait for what ch sends.
func (w *world) record(ch *Channel) {
	w.rec = &sendRecorder{next: ch.cli.Client.Transport}
	ch.cli.Client.Transport = w.rec
}

// sent reads what the bot posted in the world's rooms, as Alice sees it,
// once every event the channel sent is visible.
func (w *world) sent(t *testing.T) []channeltest.Sent {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		out, ids := w.read(t)
		missing := 0
		if w.rec != nil {
			for _, eid := range w.rec.sent() {
				if !ids[eid] {
					missing++
				}
			}
		}
		if missing == 0 || time.Now().After(deadline) {
			return out
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (w *world) read(t *testing.T) ([]channeltest.Sent, map[string]bool) {
	t.Helper()
	ids := map[string]bool{}
	type stamped struct {
		channeltest.Sent
		ts int64
	}
	var all []stamped
	for _, room := range w.rooms {
		resp, err := w.alice.Messages(context.Background(), room, "", "", mautrix.DirectionBackward, nil, 1000)
		if err != nil {
			t.Errorf("messages of %s: %v", room, err)
			continue
		}
		evs := resp.Chunk
		slices.Reverse(evs)
		for _, evt := range evs {
			if evt.Sender != w.bot.ID || evt.Type != event.EventMessage {
				continue
			}
			ids[string(evt.ID)] = true
			var c event.MessageEventContent
			if err := json.Unmarshal(evt.Content.VeryRaw, &c); err != nil {
				continue
			}
			s := channeltest.Sent{ChatID: string(room), MessageID: string(evt.ID), Text: c.Body, At: time.UnixMilli(evt.Timestamp)}
			if c.RelatesTo != nil && c.RelatesTo.Type == event.RelReplace && c.NewContent != nil {
				s.Edit, s.MessageID, s.Text = true, string(c.RelatesTo.EventID), c.NewContent.Body
			}
			all = append(all, stamped{s, evt.Timestamp})
		}
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].ts < all[j].ts })
	out := make([]channeltest.Sent, len(all))
	for i, s := range all {
		out[i] = s.Sent
	}
	return out, ids
}

func newChannel(t *testing.T, s *matrixtest.Server, bot *matrixtest.User, deps channels.Deps, edit func(*Config)) *Channel {
	t.Helper()
	cfg := DefaultConfig()
	cfg.Enabled, cfg.AllowFrom = true, []string{"*"}
	cfg.Homeserver, cfg.UserID, cfg.AccessToken = s.URL, string(bot.ID), bot.Token
	if edit != nil {
		edit(&cfg)
	}
	ch, err := New(cfg, deps)
	if err != nil {
		t.Fatal(err)
	}
	ch.editInterval = 250 * time.Millisecond
	ch.backoffMin, ch.backoffMax = 20*time.Millisecond, 200*time.Millisecond
	ch.pollTimeout = 5 * time.Second
	return ch
}

func TestConformance(t *testing.T) {
	s := homeserver(t)
	channeltest.Run(t, channeltest.Harness{
		Timeout: 20 * time.Second,
		Setup: func(t *testing.T, env channeltest.Env) channeltest.Fixture {
			w := newWorld(t, s)
			w.seedSyncToken(t, env.StateDir)
			ch := newChannel(t, s, w.bot, channels.Deps{Log: env.Log, Paths: configs.Paths{Media: env.MediaDir, State: env.StateDir}}, nil)
			w.record(ch)
			return channeltest.Fixture{
				Channel:  ch,
				SenderID: func(user string) string { return string(w.user(user).ID) },
				Emit: func(m channeltest.Message) channeltest.Emitted {
					u := w.user(m.From)
					room := w.dm[m.From]
					content := &event.MessageEventContent{MsgType: event.MsgText, Body: m.Text}
					if m.Group {
						room = w.group
						content.Body = w.bot.ID.Localpart() + ": " + m.Text
						content.Mentions = &event.Mentions{UserIDs: []id.UserID{w.bot.ID}}
					}
					return channeltest.Emitted{ChatID: string(room), MessageID: string(say(t, u, room, content))}
				},
				EmitMalformed: func() {
					bad := map[string]any{"msgtype": 5, "body": map[string]any{"not": "a string"}}
					if _, err := w.alice.SendMessageEvent(context.Background(), w.dm[channeltest.Alice], event.EventMessage, bad); err != nil {
						t.Fatal(err)
					}
				},
				Drop: s.Drop,
				Sent: func() []channeltest.Sent { return w.sent(t) },
			}
		},
	})
}
