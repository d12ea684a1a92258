// Package discordtest is a local Discord for tests: an httptest server
// with the REST endpoints the adapter uses (GET /api/v9/gateway, message
// create (JSON or multipart with files) and edit, typing, attachment
// downloads as from the CDN, application commands' bulk overwrite,
// interaction callbacks and the interaction webhook: the original
// response's edit and delete, follow-ups) and a gateway websocket speaking
// Hello, Identify, READY, heartbeats and their ACKs, MESSAGE_CREATE,
// INTERACTION_CREATE (button presses, slash commands) and Resume.
//
// Concurrency: a Server is safe for concurrent use by the code under test
// and the test: every method may be called from any goroutine, while the
// REST handlers and the gateway websocket run on the httptest server's
// goroutines, sharing one lock. New registers t.Cleanup to shut it down.
package discordtest

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// Token is the bot token the fake accepts.
const Token = "fake-bot-token"

// Bot is the bot user READY reports.
var Bot = User{ID: "9000", Username: "nanobot", Bot: true}

// AppID is the application READY reports; it differs from the bot user's
// id, as it does for applications made before 2020, so a test sees which
// one the adapter uses.
const AppID = "9500"

// User is a Discord user.
type User struct {
	ID       string `json:"id"`
	Username string `json:"username"`
	Bot      bool   `json:"bot,omitempty"`
}

// Msg is a message a user writes.
type Msg struct {
	From      User
	ChannelID string
	GuildID   string // empty: a direct message
	Content   string
	Mentions  []User
	// ReplyToAuthor makes it a reply to a message by that user.
	ReplyToAuthor *User
	// Attachments are files the user attached; the fake serves them from
	// its own URL, as Discord's CDN would.
	Attachments []File
}

// File is an attachment: one a user sent, or one the bot uploaded.
type File struct {
	Name        string
	ContentType string
	Data        []byte
	// Size is the size the message reports (0 = len(Data)); set it larger
	// or smaller to test how the adapter treats a lying payload.
	Size int
}

// Sent is a message the bot sent or edited.
type Sent struct {
	ChannelID string
	MessageID string
	Edit      bool
	Content   string
	ReplyTo   string
	Files     []File // uploaded with the message (multipart)
	// Flags are the message flags sent (8192: a voice message), and
	// Attachments the attachment metadata of payload_json.
	Flags       int
	Attachments []Attachment
	// Buttons are the message components' buttons.
	Buttons []Button
	// Interaction is the interaction whose webhook sent or edited the
	// message (its response or a follow-up); "" for channel messages.
	Interaction string
	At          time.Time
	// Seq orders the message among everything the fake recorded
	// (messages, interaction callbacks).
	Seq int
}

// Button is one message component button.
type Button struct {
	Type     int    `json:"type"`
	Label    string `json:"label"`
	Style    int    `json:"style"`
	CustomID string `json:"custom_id"`
}

// Attachment is an entry of a message's payload_json "attachments".
type Attachment struct {
	ID           json.RawMessage `json:"id"`
	Filename     string          `json:"filename"`
	DurationSecs float64         `json:"duration_secs"`
	Waveform     string          `json:"waveform"`
}

// flagVoiceMessage is Discord's IS_VOICE_MESSAGE message flag.
const flagVoiceMessage = 1 << 13

// Server is the fake.
type Server struct {
	URL string // http base; pass as apiBase

	t        testing.TB
	srv      *httptest.Server
	upgrader websocket.Upgrader

	mu      sync.Mutex
	conn    *websocket.Conn // the socket past READY/RESUMED, nil while none
	seq     int64
	pending []dispatchQ // dispatches queued while no socket is ready
	nextID  int64
	seqNo   int
	// interactions pushed, by id, and by token for the webhook routes.
	interactions map[string]*interaction
	byToken      map[string]*interaction
	// commands are the application commands by scope ("" global, else
	// the guild id), and puts counts the bulk overwrites per scope.
	commands   map[string][]AppCommand
	puts       map[string]int
	sent       []Sent
	identifies int
	resumes    int
	heartbeats int
	rateLimit  int             // answer the next N sends/edits with 429
	retryAfter float64         // seconds
	failStatus int             // answer the next send with this status, once
	files      map[string]File // served under /attachments/
	downloads  int             // attachment GETs
	closeCode  int             // close every Identify and Resume with this code
}

// CloseOnIdentify makes the gateway answer every Identify and Resume by
// closing the socket with code (4014: disallowed intents); 0 stops it.
func (f *Server) CloseOnIdentify(code int) {
	f.mu.Lock()
	f.closeCode = code
	f.mu.Unlock()
}

// New starts a fake; it stops when the test ends.
func New(t testing.TB) *Server {
	f := &Server{t: t, nextID: 100000, files: map[string]File{},
		interactions: map[string]*interaction{}, byToken: map[string]*interaction{},
		commands: map[string][]AppCommand{}, puts: map[string]int{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/v9/gateway", f.gateway)
	mux.HandleFunc("GET /api/v9/gateway/bot", f.gateway)
	mux.HandleFunc("POST /api/v9/channels/{ch}/messages", f.create)
	mux.HandleFunc("PATCH /api/v9/channels/{ch}/messages/{id}", f.edit)
	mux.HandleFunc("POST /api/v9/channels/{ch}/typing", func(w http.ResponseWriter, r *http.Request) {
		if !f.authorized(w, r) {
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("GET /attachments/{id}/{name}", f.attachment)
	mux.HandleFunc("POST /api/v9/interactions/{id}/{token}/callback", f.interactionCallback)
	mux.HandleFunc("PUT /api/v9/applications/{app}/commands", f.overwriteCommands)
	mux.HandleFunc("PUT /api/v9/applications/{app}/guilds/{guild}/commands", f.overwriteCommands)
	mux.HandleFunc("PATCH /api/v9/webhooks/{app}/{token}/messages/{id}", f.webhookEdit)
	mux.HandleFunc("DELETE /api/v9/webhooks/{app}/{token}/messages/{id}", f.webhookDelete)
	mux.HandleFunc("POST /api/v9/webhooks/{app}/{token}", f.followup)
	mux.HandleFunc("GET /ws", f.ws)
	mux.HandleFunc("GET /ws/", f.ws) // discordgo adds a slash
	f.srv = httptest.NewServer(mux)
	f.URL = f.srv.URL
	t.Cleanup(func() {
		f.mu.Lock()
		if f.conn != nil {
			_ = f.conn.Close()
			f.conn = nil
		}
		f.mu.Unlock()
		f.srv.CloseClientConnections()
		f.srv.Close()
	})
	return f
}

func (f *Server) authorized(w http.ResponseWriter, r *http.Request) bool {
	if r.Header.Get("Authorization") != "Bot "+Token {
		http.Error(w, `{"message":"401: Unauthorized","code":0}`, http.StatusUnauthorized)
		return false
	}
	return true
}

func (f *Server) gateway(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, map[string]any{"url": "ws" + strings.TrimPrefix(f.URL, "http") + "/ws", "shards": 1})
}

// limited answers 429 or a configured failure; it reports whether it did.
func (f *Server) limited(w http.ResponseWriter) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.rateLimit > 0 {
		f.rateLimit--
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusTooManyRequests)
		fmt.Fprintf(w, `{"message":"You are being rate limited.","retry_after":%g,"global":false}`, f.retryAfter)
		return true
	}
	if f.failStatus != 0 {
		st := f.failStatus
		f.failStatus = 0
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(st)
		fmt.Fprintf(w, `{"message":"failure %d","code":10003}`, st)
		return true
	}
	return false
}

type messageBody struct {
	Content   string `json:"content"`
	Reference *struct {
		MessageID string `json:"message_id"`
	} `json:"message_reference"`
	Flags       int          `json:"flags"`
	Attachments []Attachment `json:"attachments"`
	Components  []struct {
		Type       int      `json:"type"`
		Components []Button `json:"components"`
	} `json:"components"`
}

// voiceError is why Discord refuses a voice message ("" when it is
// well formed): no other content, one audio/ogg file, with its duration
// and waveform.
func voiceError(b messageBody, files []File) string {
	switch {
	case strings.TrimSpace(b.Content) != "":
		return `{"message":"Voice messages do not support additional content.","code":50161}`
	case len(files) != 1 || len(b.Attachments) != 1:
		return `{"message":"Voice messages must have a single audio attachment.","code":50159}`
	case !strings.HasPrefix(files[0].ContentType, "audio/ogg"):
		return `{"message":"Voice messages must be audio/ogg.","code":50160}`
	case b.Attachments[0].DurationSecs <= 0 || b.Attachments[0].Waveform == "":
		return `{"message":"Invalid Form Body: attachments.0.duration_secs, attachments.0.waveform required","code":50035}`
	}
	return ""
}

func (f *Server) create(w http.ResponseWriter, r *http.Request) {
	if !f.authorized(w, r) || f.limited(w) {
		return
	}
	b, files, err := readMessage(r)
	if err != nil {
		http.Error(w, `{"message":"`+err.Error()+`"}`, http.StatusBadRequest)
		return
	}
	if strings.TrimSpace(b.Content) == "" && len(files) == 0 {
		http.Error(w, `{"message":"Cannot send an empty message","code":50006}`, http.StatusBadRequest)
		return
	}
	if b.Flags&flagVoiceMessage != 0 {
		if msg := voiceError(b, files); msg != "" {
			http.Error(w, msg, http.StatusBadRequest)
			return
		}
	}
	ch := r.PathValue("ch")
	f.mu.Lock()
	f.nextID++
	id := strconv.FormatInt(f.nextID, 10)
	s := Sent{ChannelID: ch, MessageID: id, Content: b.Content, Files: files, Flags: b.Flags, Attachments: b.Attachments, At: time.Now(), Seq: f.seq1()}
	for _, row := range b.Components {
		s.Buttons = append(s.Buttons, row.Components...)
	}
	if b.Reference != nil {
		s.ReplyTo = b.Reference.MessageID
	}
	f.sent = append(f.sent, s)
	f.mu.Unlock()
	writeJSON(w, map[string]any{"id": id, "channel_id": ch, "content": b.Content, "author": Bot})
}

// readMessage reads a message body: JSON, or multipart/form-data with the
// JSON in "payload_json" and the files in "files[n]" parts, as Discord
// takes uploads.
func readMessage(r *http.Request) (messageBody, []File, error) {
	var b messageBody
	mt, params, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if mt != "multipart/form-data" {
		if err := json.NewDecoder(r.Body).Decode(&b); err != nil {
			return b, nil, errors.New("bad json")
		}
		return b, nil, nil
	}
	mr := multipart.NewReader(r.Body, params["boundary"])
	var files []File
	for {
		part, err := mr.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			return b, nil, errors.New("bad multipart body")
		}
		data, err := io.ReadAll(part)
		if err != nil {
			return b, nil, errors.New("bad multipart part")
		}
		switch name := part.FormName(); {
		case name == "payload_json":
			if err := json.Unmarshal(data, &b); err != nil {
				return b, nil, errors.New("bad payload_json")
			}
		case strings.HasPrefix(name, "files["):
			files = append(files, File{Name: part.FileName(), ContentType: part.Header.Get("Content-Type"), Data: data, Size: len(data)})
		default:
			return b, nil, errors.New("unexpected form field " + name)
		}
	}
	return b, files, nil
}

// attachment serves a file a user attached, as the CDN does (no token).
func (f *Server) attachment(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	file, ok := f.files[r.PathValue("id")]
	f.downloads++
	f.mu.Unlock()
	if !ok || file.Name != r.PathValue("name") {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", file.ContentType)
	w.Write(file.Data)
}

// Downloads returns how many attachment downloads the fake served.
func (f *Server) Downloads() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.downloads
}

func (f *Server) edit(w http.ResponseWriter, r *http.Request) {
	if !f.authorized(w, r) || f.limited(w) {
		return
	}
	var b messageBody
	if err := json.NewDecoder(r.Body).Decode(&b); err != nil {
		http.Error(w, `{"message":"bad json"}`, http.StatusBadRequest)
		return
	}
	ch, id := r.PathValue("ch"), r.PathValue("id")
	f.mu.Lock()
	f.sent = append(f.sent, Sent{ChannelID: ch, MessageID: id, Edit: true, Content: b.Content, At: time.Now(), Seq: f.seq1()})
	f.mu.Unlock()
	writeJSON(w, map[string]any{"id": id, "channel_id": ch, "content": b.Content, "author": Bot})
}

// seq1 is the next sequence number of a recorded event; f.mu held.
func (f *Server) seq1() int {
	f.seqNo++
	return f.seqNo
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

type frame struct {
	Op   int             `json:"op"`
	D    json.RawMessage `json:"d"`
	S    int64           `json:"s,omitempty"`
	Type string          `json:"t,omitempty"`
}

// ws is one gateway connection.
func (f *Server) ws(w http.ResponseWriter, r *http.Request) {
	c, err := f.upgrader.Upgrade(w, r, nil)
	if err != nil {
		return
	}
	defer c.Close()
	var wmu sync.Mutex // writes before the socket is ready
	write := func(v any) error {
		wmu.Lock()
		defer wmu.Unlock()
		return c.WriteJSON(v)
	}
	if write(map[string]any{"op": 10, "d": map[string]any{"heartbeat_interval": 5000}}) != nil {
		return
	}
	for {
		_, data, err := c.ReadMessage()
		if err != nil {
			f.mu.Lock()
			if f.conn == c {
				f.conn = nil
			}
			f.mu.Unlock()
			return
		}
		var fr frame
		if json.Unmarshal(data, &fr) != nil {
			continue
		}
		switch fr.Op {
		case 1: // heartbeat
			f.mu.Lock()
			f.heartbeats++
			f.mu.Unlock()
			wmu.Lock()
			f.mu.Lock()
			_ = c.WriteJSON(map[string]any{"op": 11})
			f.mu.Unlock()
			wmu.Unlock()
		case 2: // identify
			var id struct {
				Token string `json:"token"`
			}
			_ = json.Unmarshal(fr.D, &id)
			if id.Token != "Bot "+Token {
				_ = c.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(4004, "Authentication failed."), time.Now().Add(time.Second))
				return
			}
			if f.refuse(c) {
				return
			}
			wmu.Lock()
			f.mu.Lock()
			f.identifies++
			f.seq = 0
			f.dispatch(c, "READY", map[string]any{"v": 9, "session_id": "fake-session", "user": Bot, "guilds": []any{},
				"application": map[string]any{"id": AppID, "flags": 0}})
			f.ready(c)
			f.mu.Unlock()
			wmu.Unlock()
		case 6: // resume
			if f.refuse(c) {
				return
			}
			wmu.Lock()
			f.mu.Lock()
			f.resumes++
			f.dispatch(c, "RESUMED", map[string]any{})
			f.ready(c)
			f.mu.Unlock()
			wmu.Unlock()
		}
	}
}

// dispatch writes one op 0 frame to c; f.mu held.
func (f *Server) dispatch(c *websocket.Conn, typ string, d any) {
	f.seq++
	raw, _ := json.Marshal(d)
	_ = c.WriteJSON(frame{Op: 0, D: raw, S: f.seq, Type: typ})
}

// ready makes c the live socket and flushes what waited; f.mu held.
func (f *Server) ready(c *websocket.Conn) {
	f.conn = c
	for _, q := range f.pending {
		f.seq++
		_ = c.WriteMessage(websocket.TextMessage, []byte(fmt.Sprintf(`{"op":0,"s":%d,"t":%q,"d":%s}`, f.seq, q.typ, q.d)))
	}
	f.pending = nil
}

// dispatchQ is a dispatch waiting for a socket.
type dispatchQ struct {
	typ string
	d   []byte
}

// push sends a MESSAGE_CREATE payload now, or once a socket is ready.
func (f *Server) push(d []byte) { f.pushEvent("MESSAGE_CREATE", d) }

// pushEvent sends a dispatch of type typ now, or once a socket is ready.
func (f *Server) pushEvent(typ string, d []byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.conn == nil {
		f.pending = append(f.pending, dispatchQ{typ, d})
		return
	}
	f.seq++
	if err := f.conn.WriteMessage(websocket.TextMessage, []byte(fmt.Sprintf(`{"op":0,"s":%d,"t":%q,"d":%s}`, f.seq, typ, d))); err != nil {
		f.pending = append(f.pending, dispatchQ{typ, d})
	}
}

// Send makes a user write a message and returns its id.
func (f *Server) Send(m Msg) string {
	f.mu.Lock()
	f.nextID++
	id := strconv.FormatInt(f.nextID, 10)
	f.mu.Unlock()
	mentions := m.Mentions
	if mentions == nil {
		mentions = []User{}
	}
	d := map[string]any{
		"id": id, "channel_id": m.ChannelID, "author": m.From, "content": m.Content,
		"mentions": mentions, "timestamp": time.Now().UTC().Format(time.RFC3339), "type": 0,
	}
	if m.GuildID != "" {
		d["guild_id"] = m.GuildID
	}
	if len(m.Attachments) > 0 {
		var atts []map[string]any
		f.mu.Lock()
		for _, a := range m.Attachments {
			f.nextID++
			aid := strconv.FormatInt(f.nextID, 10)
			f.files[aid] = a
			size := a.Size
			if size == 0 {
				size = len(a.Data)
			}
			atts = append(atts, map[string]any{
				"id": aid, "filename": a.Name, "content_type": a.ContentType, "size": size,
				"url": f.URL + "/attachments/" + aid + "/" + a.Name, "proxy_url": f.URL + "/attachments/" + aid + "/" + a.Name,
			})
		}
		f.mu.Unlock()
		d["attachments"] = atts
	}
	if m.ReplyToAuthor != nil {
		d["referenced_message"] = map[string]any{"id": "1", "channel_id": m.ChannelID, "author": *m.ReplyToAuthor, "content": "earlier"}
	}
	raw, _ := json.Marshal(d)
	f.push(raw)
	return id
}

// PushRaw sends a MESSAGE_CREATE with d as its payload, as is.
func (f *Server) PushRaw(d string) { f.push([]byte(d)) }

// refuse closes c with the code set by CloseOnIdentify, if any.
func (f *Server) refuse(c *websocket.Conn) bool {
	f.mu.Lock()
	code := f.closeCode
	f.mu.Unlock()
	if code == 0 {
		return false
	}
	_ = c.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(code, "refused"), time.Now().Add(time.Second))
	return true
}

// Drop closes the live socket, as a network failure would.
func (f *Server) Drop() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.conn != nil {
		_ = f.conn.UnderlyingConn().Close()
		f.conn = nil
	}
}

// RateLimit answers the next n sends or edits with 429 and retry_after.
func (f *Server) RateLimit(n int, retryAfter time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rateLimit, f.retryAfter = n, retryAfter.Seconds()
}

// FailNext answers the next send or edit with status.
func (f *Server) FailNext(status int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failStatus = status
}

// Sent returns what the bot sent and edited, in order.
func (f *Server) Sent() []Sent {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Sent(nil), f.sent...)
}

// Counts returns how many identifies, resumes and heartbeats the fake saw.
func (f *Server) Counts() (identifies, resumes, heartbeats int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.identifies, f.resumes, f.heartbeats
}
