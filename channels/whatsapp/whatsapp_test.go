package whatsapp

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.mau.fi/whatsmeow"
	"go.mau.fi/whatsmeow/proto/waE2E"
	"go.mau.fi/whatsmeow/types"
	"go.mau.fi/whatsmeow/types/events"
	"google.golang.org/protobuf/proto"

	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/channels"
	"github.com/nanobot-go/nanobot/channels/channeltest"
	"github.com/nanobot-go/nanobot/configs"
	"github.com/nanobot-go/nanobot/gateway/relay"
	"github.com/nanobot-go/nanobot/internal/waitfor"
)

var (
	botPN    = types.NewJID("491700000001", types.DefaultUserServer)
	botLID   = types.NewJID("88880001", types.HiddenUserServer)
	alicePN  = types.NewJID("491701234567", types.DefaultUserServer)
	aliceLID = types.NewJID("77770002", types.HiddenUserServer)
	group    = types.NewJID("120363000000000001", types.GroupServer)
)

// fakeClient stands in for *whatsmeow.Client: it records what the adapter
// sends and lets the test play WhatsApp's side (events, downloads, QR
// codes).
type fakeClient struct {
	mu        sync.Mutex
	loggedIn  bool
	handlers  []whatsmeow.EventHandler
	sent      []sentMsg
	uploads   []whatsmeow.MediaType
	reads     []types.MessageID
	presence  []types.JID
	files     map[whatsmeow.DownloadableMessage][]byte
	downloads int
	lids      map[types.JID]types.JID
	qr        chan whatsmeow.QRChannelItem
	connected chan struct{}
	pairCode  string
}

type sentMsg struct {
	to  types.JID
	msg *waE2E.Message
}

func newFake() *fakeClient {
	return &fakeClient{loggedIn: true, files: map[whatsmeow.DownloadableMessage][]byte{},
		lids: map[types.JID]types.JID{aliceLID: alicePN}, connected: make(chan struct{}, 4)}
}

func (f *fakeClient) Connect() error {
	f.connected <- struct{}{}
	return nil
}
func (f *fakeClient) Disconnect() {}
func (f *fakeClient) IsLoggedIn() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.loggedIn
}
func (f *fakeClient) AddEventHandler(h whatsmeow.EventHandler) uint32 {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.handlers = append(f.handlers, h)
	return uint32(len(f.handlers))
}
func (f *fakeClient) emit(evt any) {
	f.mu.Lock()
	hs := append([]whatsmeow.EventHandler(nil), f.handlers...)
	f.mu.Unlock()
	for _, h := range hs {
		h(evt)
	}
}
func (f *fakeClient) SendMessage(_ context.Context, to types.JID, msg *waE2E.Message, _ ...whatsmeow.SendRequestExtra) (whatsmeow.SendResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sent = append(f.sent, sentMsg{to, msg})
	return whatsmeow.SendResponse{ID: types.MessageID("SENT" + string(rune('0'+len(f.sent))))}, nil
}
func (f *fakeClient) Upload(_ context.Context, data []byte, kind whatsmeow.MediaType) (whatsmeow.UploadResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.uploads = append(f.uploads, kind)
	return whatsmeow.UploadResponse{URL: "https://mmg.example/x", DirectPath: "/x", MediaKey: []byte("k"), FileLength: uint64(len(data))}, nil
}
func (f *fakeClient) Download(_ context.Context, d whatsmeow.DownloadableMessage) ([]byte, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.downloads++
	data, ok := f.files[d]
	if !ok {
		return nil, errors.New("no such media")
	}
	return data, nil
}
func (f *fakeClient) SendChatPresence(_ context.Context, jid types.JID, _ types.ChatPresence, _ types.ChatPresenceMedia) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.presence = append(f.presence, jid)
	return nil
}
func (f *fakeClient) MarkRead(_ context.Context, ids []types.MessageID, _ time.Time, _, _ types.JID, _ ...types.ReceiptType) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reads = append(f.reads, ids...)
	return nil
}
func (f *fakeClient) GetQRChannel(context.Context) (<-chan whatsmeow.QRChannelItem, error) {
	return f.qr, nil
}
func (f *fakeClient) PairPhone(_ context.Context, phone string, _ bool, _ whatsmeow.PairClientType, _ string) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.pairCode = phone
	return "ABCD-EFGH", nil
}
func (f *fakeClient) Own() (types.JID, types.JID) { return botPN, botLID }
func (f *fakeClient) PhoneOf(_ context.Context, lid types.JID) (types.JID, error) {
	return f.lids[lid], nil
}

func (f *fakeClient) sentMessages() []sentMsg {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]sentMsg(nil), f.sent...)
}

// inbox records deliveries and refuses senders whose id contains the
// stranger's number (if any).
type inbox = channeltest.Recorder

func newInbox(stranger string) *inbox {
	return &channeltest.Recorder{Refuse: func(s string) bool { return stranger != "" && strings.Contains(s, stranger) }}
}

// running starts a channel over fake and waits until it connected.
func running(t *testing.T, fake *fakeClient, in channels.Inbox, edit func(*Config)) *Channel {
	t.Helper()
	cfg := DefaultConfig()
	cfg.Enabled = true
	if edit != nil {
		edit(&cfg)
	}
	ch, err := New(cfg, channels.Deps{Paths: configs.Paths{Media: t.TempDir(), State: t.TempDir()}})
	if err != nil {
		t.Fatal(err)
	}
	ch.open = func(context.Context) (client, func(), error) { return fake, func() {}, nil }
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ch.Run(ctx, in) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Error("Run did not return")
		}
	})
	select {
	case <-fake.connected:
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not connect")
	}
	fake.emit(&events.Connected{})
	return ch
}

func message(chat, sender types.JID, id string, m *waE2E.Message) *events.Message {
	return &events.Message{Info: types.MessageInfo{
		MessageSource: types.MessageSource{Chat: chat, Sender: sender, IsGroup: chat.Server == types.GroupServer},
		ID:            types.MessageID(id), Timestamp: time.Now(), PushName: "Alice",
	}, Message: m}
}

func text(s string) *waE2E.Message { return &waE2E.Message{Conversation: proto.String(s)} }

func TestDirectMessageAndLIDs(t *testing.T) {
	fake, in := newFake(), newInbox("")
	ch := running(t, fake, in, nil)
	if h := ch.Health(); h.State != channels.StateConnected {
		t.Fatalf("health %+v", h)
	}
	fake.emit(message(alicePN, alicePN, "M1", text("hello bot")))
	// A sender known by LID only: mapped to the phone number.
	fake.emit(message(aliceLID, aliceLID, "M2", text("from my lid")))
	// Newer events carry the phone number as SenderAlt.
	e := message(aliceLID, aliceLID, "M3", text("with alt"))
	e.Info.SenderAlt = alicePN
	fake.emit(e)
	got := in.All()
	if len(got) != 3 {
		t.Fatalf("delivered %d, want 3: %+v", len(got), got)
	}
	if got[0].Content != "hello bot" || got[0].ChatID != alicePN.String() || got[0].MessageID != "M1" || got[0].IsGroup {
		t.Errorf("first: %+v", got[0])
	}
	gate := &relay.Gate{AllowFrom: map[string][]string{"whatsapp": {"+491701234567"}}}
	for i, m := range got {
		if !gate.Admits("whatsapp", m.SenderID) {
			t.Errorf("message %d: sender %q does not match allowFrom +491701234567", i, m.SenderID)
		}
	}
	if !strings.Contains(got[1].SenderID, aliceLID.String()) {
		t.Errorf("LID sender id %q lacks the LID", got[1].SenderID)
	}
	if len(fake.reads) != 3 {
		t.Errorf("read receipts %v", fake.reads)
	}
	// Not for the bot: its own, status broadcasts, edits, reactions.
	own := message(alicePN, botPN, "X1", text("mine"))
	own.Info.IsFromMe = true
	status := message(types.NewJID("status", types.BroadcastServer), alicePN, "X2", text("status"))
	edit := message(alicePN, alicePN, "X3", text("edited"))
	edit.IsEdit = true
	react := message(alicePN, alicePN, "X4", &waE2E.Message{ReactionMessage: &waE2E.ReactionMessage{Text: proto.String("👍")}})
	for _, e := range []*events.Message{own, status, edit, react} {
		fake.emit(e)
	}
	if n := len(in.All()); n != 3 {
		t.Errorf("%d delivered after ignorable events, want still 3", n)
	}
}

func TestGroupPolicy(t *testing.T) {
	fake, in := newFake(), newInbox("")
	running(t, fake, in, nil)
	plain := message(group, alicePN, "G1", text("just chatting"))
	mention := message(group, aliceLID, "G2", &waE2E.Message{ExtendedTextMessage: &waE2E.ExtendedTextMessage{
		Text: proto.String("@88880001 what's the weather?"), ContextInfo: &waE2E.ContextInfo{MentionedJID: []string{botLID.String()}}}})
	reply := message(group, alicePN, "G3", &waE2E.Message{ExtendedTextMessage: &waE2E.ExtendedTextMessage{
		Text: proto.String("thanks"), ContextInfo: &waE2E.ContextInfo{StanzaID: proto.String("SENT1"), Participant: proto.String(botPN.String())}}})
	for _, e := range []*events.Message{plain, mention, reply} {
		fake.emit(e)
	}
	got := in.All()
	if len(got) != 2 || got[0].Content != "what's the weather?" || got[1].Content != "thanks" || !got[0].IsGroup {
		t.Fatalf("delivered %+v; want the mention (without it) and the reply", got)
	}

	fake2, in2 := newFake(), newInbox("")
	running(t, fake2, in2, func(c *Config) { c.GroupPolicy = channels.GroupOpen })
	fake2.emit(message(group, alicePN, "G4", text("anyone?")))
	if len(in2.All()) != 1 {
		t.Error("groupPolicy open did not deliver a plain group message")
	}
}

func TestMediaIn(t *testing.T) {
	fake, in := newFake(), newInbox("49170999")
	ch := running(t, fake, in, func(c *Config) { c.MaxMediaBytes = 1000 })
	img := &waE2E.ImageMessage{Caption: proto.String("look"), Mimetype: proto.String("image/jpeg"), FileLength: proto.Uint64(5)}
	fake.files[img] = []byte("\xff\xd8\xff\xe0x")
	voice := &waE2E.AudioMessage{PTT: proto.Bool(true), Mimetype: proto.String("audio/ogg; codecs=opus"), FileLength: proto.Uint64(4)}
	fake.files[voice] = []byte("OggS")
	big := &waE2E.DocumentMessage{FileName: proto.String("big.pdf"), Mimetype: proto.String("application/pdf"), FileLength: proto.Uint64(5000)}
	fake.emit(message(alicePN, alicePN, "I1", &waE2E.Message{ImageMessage: img}))
	fake.emit(message(alicePN, alicePN, "I2", &waE2E.Message{AudioMessage: voice}))
	fake.emit(message(alicePN, alicePN, "I3", &waE2E.Message{DocumentMessage: big}))
	stranger := types.NewJID("491709990000", types.DefaultUserServer)
	strangerImg := &waE2E.ImageMessage{Mimetype: proto.String("image/jpeg"), FileLength: proto.Uint64(5)}
	fake.files[strangerImg] = []byte("\xff\xd8\xff\xe0y")
	fake.emit(message(stranger, stranger, "I4", &waE2E.Message{ImageMessage: strangerImg}))
	got := in.All()
	if len(got) != 4 {
		t.Fatalf("delivered %d", len(got))
	}
	if len(got[0].Media) != 1 || !got[0].Media[0].IsImage() || got[0].Content != "look" {
		t.Errorf("image: %+v", got[0])
	} else if data, _ := os.ReadFile(got[0].Media[0].Path); !bytes.Equal(data, fake.files[img]) || filepath.Dir(got[0].Media[0].Path) != ch.mediaDir {
		t.Errorf("image saved wrong: %s", got[0].Media[0].Path)
	}
	if len(got[1].Media) != 1 || got[1].Media[0].MIMEType != "audio/ogg" {
		t.Errorf("voice note: %+v", got[1])
	}
	if len(got[2].Media) != 0 || !strings.Contains(got[2].Content, "too large") {
		t.Errorf("big document: %+v", got[2])
	}
	if len(got[3].Media) != 0 || !strings.Contains(got[3].Content, "not downloaded") {
		t.Errorf("stranger's image: %+v", got[3])
	}
	if fake.downloads != 2 {
		t.Errorf("%d downloads, want 2 (never the big file or the stranger's)", fake.downloads)
	}
}

func TestOutbound(t *testing.T) {
	fake, in := newFake(), newInbox("")
	ch := running(t, fake, in, nil)
	ctx := t.Context()
	ref, err := ch.Send(ctx, bus.Outbound{ChatID: alicePN.String(), Content: "## Plan\n**bold** and *it* ~~old~~ [docs](https://example.org)\n```go\nx := **y**\n```"})
	if err != nil {
		t.Fatal(err)
	}
	sent := fake.sentMessages()
	if len(sent) != 1 || ref.MessageID == "" || sent[0].to != alicePN {
		t.Fatalf("sent %+v ref %+v", sent, ref)
	}
	want := "*Plan*\n*bold* and _it_ ~old~ docs (https://example.org)\n```x := **y**\n```"
	if got := sent[0].msg.GetConversation(); got != want {
		t.Errorf("text\n got %q\nwant %q", got, want)
	}
	if err := ch.Typing(ctx, group.String(), nil); err != nil || len(fake.presence) != 1 {
		t.Errorf("typing: %v %v", err, fake.presence)
	}
	dir := t.TempDir()
	png := filepath.Join(dir, "chart.png")
	os.WriteFile(png, []byte("\x89PNG\r\n\x1a\nrest"), 0o600)
	pdf := filepath.Join(dir, "report.pdf")
	os.WriteFile(pdf, []byte("%PDF-1.4"), 0o600)
	if _, err := ch.SendMedia(ctx, bus.Outbound{ChatID: group.String(), Content: "your files", Media: []bus.Media{{Path: png}, {Path: pdf, MIMEType: "application/pdf"}}}); err != nil {
		t.Fatal(err)
	}
	sent = fake.sentMessages()[1:]
	if len(sent) != 2 || sent[0].msg.GetImageMessage().GetCaption() != "your files" || sent[1].msg.GetDocumentMessage().GetFileName() != "report.pdf" {
		t.Errorf("media messages %+v", sent)
	}
	if len(fake.uploads) != 2 || fake.uploads[0] != whatsmeow.MediaImage || fake.uploads[1] != whatsmeow.MediaDocument {
		t.Errorf("uploads %v", fake.uploads)
	}
	var pe *channels.PermanentError
	if _, err := ch.Send(ctx, bus.Outbound{ChatID: "not a jid", Content: "x"}); !errors.As(err, &pe) {
		t.Errorf("bad chat id: %v", err)
	}
}

type prompt struct{ shown []string }

func (p *prompt) Show(s string) { p.shown = append(p.shown, s) }

func loginChannel(t *testing.T, fake *fakeClient, pairPhone string) *Channel {
	t.Helper()
	cfg := DefaultConfig()
	cfg.PairPhone = pairPhone
	ch, err := New(cfg, channels.Deps{Paths: configs.Paths{State: t.TempDir()}})
	if err != nil {
		t.Fatal(err)
	}
	ch.open = func(context.Context) (client, func(), error) { return fake, func() {}, nil }
	return ch
}

func TestLoginByQR(t *testing.T) {
	for _, tc := range []struct {
		name  string
		items []whatsmeow.QRChannelItem
		want  error
		codes int
	}{
		{"scanned", []whatsmeow.QRChannelItem{{Event: "code", Code: "2@abc", Timeout: time.Minute}, {Event: "code", Code: "2@def", Timeout: 20 * time.Second}, whatsmeow.QRChannelSuccess}, nil, 2},
		{"not scanned", []whatsmeow.QRChannelItem{{Event: "code", Code: "2@abc"}, whatsmeow.QRChannelTimeout}, ErrLoginTimeout, 1},
		{"refused", []whatsmeow.QRChannelItem{{Event: "error", Error: errors.New("client outdated")}}, errors.New("client outdated"), 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fake := newFake()
			fake.loggedIn = false
			fake.qr = make(chan whatsmeow.QRChannelItem, len(tc.items))
			for _, it := range tc.items {
				fake.qr <- it
			}
			close(fake.qr)
			p := &prompt{}
			err := loginChannel(t, fake, "").Login(t.Context(), p)
			switch {
			case tc.want == nil && err != nil, tc.want != nil && (err == nil || !strings.Contains(err.Error(), tc.want.Error())):
				t.Fatalf("Login = %v, want %v", err, tc.want)
			}
			codes := 0
			for _, s := range p.shown {
				if strings.Contains(s, "Scan with WhatsApp") {
					codes++
					if !strings.Contains(s, "█") && !strings.Contains(s, "▀") && !strings.Contains(s, "▄") {
						t.Errorf("no QR drawing in %q", s)
					}
				}
			}
			if codes != tc.codes {
				t.Errorf("%d QR codes shown, want %d", codes, tc.codes)
			}
		})
	}
	fake := newFake()
	p := &prompt{}
	if err := loginChannel(t, fake, "").Login(t.Context(), p); err != nil || !strings.Contains(p.shown[0], "already paired") {
		t.Errorf("already paired: %v %v", err, p.shown)
	}
}

func TestLoginByCode(t *testing.T) {
	fake := newFake()
	fake.loggedIn = false
	ch := loginChannel(t, fake, "+491701234567")
	p := &prompt{}
	done := make(chan error, 1)
	go func() { done <- ch.Login(t.Context(), p) }()
	<-fake.connected
	waitfor.Within(t, "the pairing code requested", 5*time.Second, func() bool { return fake.pairCodeSet() != "" })
	fake.emit(&events.PairSuccess{ID: botPN})
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if fake.pairCodeSet() != "491701234567" || !strings.Contains(strings.Join(p.shown, "\n"), "ABCD-EFGH") {
		t.Errorf("phone %q, shown %v", fake.pairCodeSet(), p.shown)
	}
}

func (f *fakeClient) pairCodeSet() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.pairCode
}

func TestRunLifecycle(t *testing.T) {
	// A fresh device store (the real devstore and whatsmeow client) has no
	// paired device, and nothing to save until pairing: no file appears.
	ch, err := New(DefaultConfig(), channels.Deps{Paths: configs.Paths{State: t.TempDir()}})
	if err != nil {
		t.Fatal(err)
	}
	if err := ch.Run(t.Context(), newInbox("")); !errors.Is(err, ErrNotPaired) || !channels.IsFatal(err) {
		t.Fatalf("Run on a fresh store = %v, want ErrNotPaired as a fatal error", err)
	}
	if _, err := os.Stat(ch.storePath); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("an unpaired device store was written: %v", err)
	}
	// Logged out from the phone: Run ends with an error.
	fake := newFake()
	ch2 := loginChannel(t, fake, "")
	done := make(chan error, 1)
	go func() { done <- ch2.Run(context.Background(), newInbox("")) }()
	<-fake.connected
	fake.emit(&events.Disconnected{})
	if h := ch2.Health(); h.State != channels.StateReconnecting {
		t.Errorf("after a disconnect health is %+v", h)
	}
	fake.emit(&events.LoggedOut{})
	select {
	case err := <-done:
		if !errors.Is(err, ErrLoggedOut) || !channels.IsFatal(err) {
			t.Errorf("Run = %v, want ErrLoggedOut as a fatal error", err)
		}
		if h := ch2.Health(); h.State != channels.StateFailed {
			t.Errorf("health after logout %+v, want failed", h)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Run kept going after a logout")
	}
}

func TestConfigValidation(t *testing.T) {
	for name, c := range map[string]Config{
		"groupPolicy":   {GroupConfig: channels.GroupConfig{GroupPolicy: "sometimes"}},
		"maxMediaBytes": {GroupConfig: channels.GroupConfig{GroupPolicy: channels.GroupOpen}, MaxMediaBytes: -1},
		"pairPhone":     {GroupConfig: channels.GroupConfig{GroupPolicy: channels.GroupOpen}, PairPhone: "+49 170 12"},
	} {
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), name+":") {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// An SQLite whatsapp.db of an earlier version without the new store stops
// the channel for good with the re-link instruction, and is left as it was.
func TestLegacyStoreStopsRun(t *testing.T) {
	state := t.TempDir()
	legacy := filepath.Join(state, LegacyStoreFile)
	old := []byte("SQLite format 3\x00 pretend pages")
	if err := os.WriteFile(legacy, old, 0o600); err != nil {
		t.Fatal(err)
	}
	ch, err := New(DefaultConfig(), channels.Deps{Paths: configs.Paths{State: state}})
	if err != nil {
		t.Fatal(err)
	}
	err = ch.Run(t.Context(), newInbox(""))
	if !errors.Is(err, ErrLegacyStore) || !channels.IsFatal(err) {
		t.Fatalf("Run = %v, want ErrLegacyStore as a fatal error", err)
	}
	if !strings.Contains(err.Error(), "nanobot channels login whatsapp") {
		t.Errorf("error %q does not name the login command", err)
	}
	if h := ch.Health(); h.State != channels.StateFailed {
		t.Errorf("health %+v, want failed", h)
	}
	got, err := os.ReadFile(legacy)
	if err != nil || !bytes.Equal(got, old) {
		t.Errorf("old store changed: %q, %v", got, err)
	}
	if _, err := os.Stat(ch.storePath); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("new store created: %v", err)
	}
}

// Login still runs next to the old file (that is how users re-link), and
// says what became of it; once the new store exists Run ignores the old one.
func TestLegacyStoreLoginRelinks(t *testing.T) {
	fake := newFake()
	fake.loggedIn = false
	fake.qr = make(chan whatsmeow.QRChannelItem, 2)
	fake.qr <- whatsmeow.QRChannelItem{Event: "code", Code: "2@abc", Timeout: time.Minute}
	fake.qr <- whatsmeow.QRChannelSuccess
	close(fake.qr)
	ch := loginChannel(t, fake, "")
	if err := os.WriteFile(ch.legacyPath, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	if !ch.legacyOnly() {
		t.Fatal("legacyOnly = false with only whatsapp.db present")
	}
	p := &prompt{}
	if err := ch.Login(t.Context(), p); err != nil {
		t.Fatal(err)
	}
	if shown := strings.Join(p.shown, "\n"); !strings.Contains(shown, "format changed") || !strings.Contains(shown, ch.legacyPath) || !strings.Contains(shown, "Paired") {
		t.Errorf("login output %q: want the note on the old store and the pairing", shown)
	}
	if err := os.WriteFile(ch.storePath, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if ch.legacyOnly() {
		t.Error("legacyOnly = true with the new store present")
	}
}

// A damaged device store stops the channel for good, naming the file and
// the way out, and is left for the user to look at.
func TestDamagedStoreStopsRun(t *testing.T) {
	state := t.TempDir()
	ch, err := New(DefaultConfig(), channels.Deps{Paths: configs.Paths{State: state}})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(ch.storePath, []byte("half a file"), 0o600); err != nil {
		t.Fatal(err)
	}
	err = ch.Run(t.Context(), newInbox(""))
	if !channels.IsFatal(err) || !strings.Contains(err.Error(), ch.storePath) || !strings.Contains(err.Error(), "channels login whatsapp") {
		t.Fatalf("Run = %v, want a fatal error naming %s and the login command", err, ch.storePath)
	}
	if got, _ := os.ReadFile(ch.storePath); string(got) != "half a file" {
		t.Errorf("damaged file changed to %q", got)
	}
}
