// Package telegramtest is a local Telegram Bot API server for tests: an httptest
// server that speaks the wire protocol the real one does (POST
// /bot<token>/<method> with multipart, form or JSON parameters, a real long
// poll for getUpdates honouring offset and timeout, file downloads under
// /file/bot<token>/<path>), keeps the chats' messages, the message drafts
// streamed to private chats (sendMessageDraft), rich messages
// (sendRichMessage) and the command menus per scope (setMyCommands),
// validates HTML and parameters the way Telegram does, and lets a test
// inject failures (429 with retry_after, a dropped connection, a malformed
// update, a method the server refuses for good).
//
// Concurrency: a Server is safe for concurrent use by the code under test
// and the test: every method may be called from any goroutine, and the Bot
// API handlers, held long polls included, run on the httptest server's
// goroutines under one lock. New registers t.Cleanup(Close); ParseHTML keeps
// no state.
package telegramtest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/http/httptest"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf16"
	"unicode/utf8"
)

// Token is the bot token the fake accepts. It has the shape of a real one
// (digits, a colon, 35 characters), which clients such as telego check.
const Token = "123456:TEST-token-ABCDEFGHIJKLMNOPQRSTUVWX"

// The bot the fake is.
const (
	BotID       = 123456
	BotUsername = "nano_bot"
)

// MessageLimit is Telegram's limit on a message text (characters after
// entity parsing).
const MessageLimit = 4096

// User is a Telegram user.
type User struct {
	ID        int64
	Username  string
	FirstName string
	// IsBot marks another bot as the author.
	IsBot bool
}

// Chat is a Telegram chat.
type Chat struct {
	ID      int64
	Type    string // private, group, supergroup, channel
	Title   string
	IsForum bool
}

// Msg is a message a user sends; Send turns it into an update.
type Msg struct {
	From User
	Chat Chat
	Text string
	// Caption is the text of a media message.
	Caption string
	// ThreadID puts the message in a forum topic.
	ThreadID int64
	// ReplyTo is the id of the message this replies to (in the same chat).
	ReplyTo int64
	// Photo, Document, Voice, Audio are file ids from AddFile.
	Photo    []string // sizes, smallest first
	Document string
	Voice    string
	Audio    string
	// FileName and MIMEType describe Document or Audio.
	FileName, MIMEType string
}

// Sent is a message (or edit) the bot sent.
type Sent struct {
	Method    string
	ChatID    int64
	MessageID int64
	Edit      bool
	Text      string // as sent
	ParseMode string
	// Visible is the text as Telegram shows it; Rendered the same with
	// <pre> blocks written as Markdown fences.
	Visible, Rendered string
	ReplyTo           int64
	ThreadID          int64
	Upload            *Upload
	// Buttons are the inline keyboard's buttons (reply_markup), row by
	// row.
	Buttons [][]Button
	// Rich is set for a rich message (sendRichMessage): Text and Visible
	// are then its Markdown, as sent.
	Rich bool
	At   time.Time
}

// Draft is one sendMessageDraft: a preview of a message being written,
// shown in a private chat until the bot sends the message.
type Draft struct {
	ChatID   int64
	DraftID  int64
	ThreadID int64
	// Text and ParseMode are as sent; Visible is the text as Telegram
	// shows it.
	Text, ParseMode, Visible string
	At                       time.Time
}

// Button is one inline keyboard button.
type Button struct {
	Text         string `json:"text"`
	CallbackData string `json:"callback_data"`
}

// Upload is a file the bot sent.
type Upload struct {
	Field, Name string
	Data        []byte
}

// Call is one Bot API request.
type Call struct {
	Method string
	Params map[string]string
	At     time.Time
}

type file struct {
	id, path string
	data     []byte
	size     int64
}

type failure struct {
	code       int
	desc       string
	retryAfter int
}

// Server is the fake.
type Server struct {
	*httptest.Server
	t testing.TB

	mu         sync.Mutex
	updates    []json.RawMessage // pending, in order
	ids        []int64           // update ids of updates
	nextID     int64
	confirmed  int64 // updates below this offset are acknowledged
	wake       chan struct{}
	dropped    chan struct{}
	abortNext  int // getUpdates requests still to abort after Drop
	polls      int // getUpdates requests served
	holding    int // getUpdates requests being held open (long polls)
	msgSeq     map[int64]int64
	msgs       map[[2]int64]*Sent // chat, message id -> current state
	sent       []Sent
	calls      []Call
	files      map[string]*file
	fails      map[string][]failure
	rejectHTML int
	blocked    map[int64]bool
	users      map[int64]User
	holds      map[string]chan struct{}
	chatTypes  map[int64]string    // chats users wrote in, by id
	drafts     []Draft             // sendMessageDraft calls accepted, in order
	refused    map[string]failure  // methods failing for good (Refuse)
	menus      map[string][]string // command names by scope (setMyCommands)
}

// New starts a fake and closes it when the test ends.
func New(t testing.TB) *Server {
	s := &Server{
		t: t, nextID: 1, wake: make(chan struct{}), dropped: make(chan struct{}),
		msgSeq: map[int64]int64{}, msgs: map[[2]int64]*Sent{}, files: map[string]*file{},
		fails: map[string][]failure{}, blocked: map[int64]bool{}, users: map[int64]User{},
		chatTypes: map[int64]string{}, refused: map[string]failure{}, menus: map[string][]string{},
	}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	return s
}

// Hold makes calls of method wait (recorded, unanswered) until release is
// called: a test sees what the client does while one call is pending.
func (s *Server) Hold(method string) (release func()) {
	ch := make(chan struct{})
	s.mu.Lock()
	if s.holds == nil {
		s.holds = map[string]chan struct{}{}
	}
	s.holds[method] = ch
	s.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			s.mu.Lock()
			delete(s.holds, method)
			s.mu.Unlock()
			close(ch)
		})
	}
}

// Close stops the server, ending the long polls first.
func (s *Server) Close() {
	s.Drop()
	s.Server.CloseClientConnections()
	s.Server.Close()
}

// Send makes user m.From send m; it returns the update and message ids.
func (s *Server) Send(m Msg) (updateID, messageID int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.msgSeq[m.Chat.ID]++
	messageID = s.msgSeq[m.Chat.ID]
	s.users[m.From.ID] = m.From
	s.chatTypes[m.Chat.ID] = m.Chat.Type
	msg := map[string]any{
		"message_id": messageID,
		"date":       time.Now().Unix(),
		"chat":       chatJSON(m.Chat),
	}
	if m.Chat.Type != "channel" {
		msg["from"] = userJSON(m.From)
	} else {
		msg["sender_chat"] = chatJSON(m.Chat)
	}
	if m.Text != "" {
		msg["text"] = m.Text
		if e := entities(m.Text); len(e) > 0 {
			msg["entities"] = e
		}
	}
	if m.Caption != "" {
		msg["caption"] = m.Caption
		if e := entities(m.Caption); len(e) > 0 {
			msg["caption_entities"] = e
		}
	}
	if m.ThreadID != 0 {
		msg["message_thread_id"] = m.ThreadID
		msg["is_topic_message"] = true
		if m.ReplyTo == 0 {
			// Telegram links a topic message to the topic's creation.
			msg["reply_to_message"] = map[string]any{
				"message_id": m.ThreadID, "date": 0, "chat": chatJSON(m.Chat),
				"from":                userJSON(m.From),
				"forum_topic_created": map[string]any{"name": "topic", "icon_color": 0},
			}
		}
	}
	if m.ReplyTo != 0 {
		if orig, ok := s.msgs[[2]int64{m.Chat.ID, m.ReplyTo}]; ok {
			msg["reply_to_message"] = map[string]any{
				"message_id": m.ReplyTo, "date": 0, "chat": chatJSON(m.Chat),
				"from": map[string]any{"id": BotID, "is_bot": true, "first_name": "Nano", "username": BotUsername},
				"text": orig.Visible,
			}
		} else {
			msg["reply_to_message"] = map[string]any{"message_id": m.ReplyTo, "date": 0, "chat": chatJSON(m.Chat), "from": userJSON(m.From), "text": "earlier"}
		}
	}
	if len(m.Photo) > 0 {
		var sizes []map[string]any
		for i, id := range m.Photo {
			f := s.files[id]
			sizes = append(sizes, map[string]any{"file_id": id, "file_unique_id": "u" + id, "width": 90 * (i + 1), "height": 60 * (i + 1), "file_size": f.size})
		}
		msg["photo"] = sizes
	}
	if m.Document != "" {
		f := s.files[m.Document]
		msg["document"] = map[string]any{"file_id": f.id, "file_unique_id": "u" + f.id, "file_name": m.FileName, "mime_type": m.MIMEType, "file_size": f.size}
	}
	if m.Voice != "" {
		f := s.files[m.Voice]
		msg["voice"] = map[string]any{"file_id": f.id, "file_unique_id": "u" + f.id, "duration": 3, "mime_type": "audio/ogg", "file_size": f.size}
	}
	if m.Audio != "" {
		f := s.files[m.Audio]
		msg["audio"] = map[string]any{"file_id": f.id, "file_unique_id": "u" + f.id, "duration": 3, "file_name": m.FileName, "mime_type": m.MIMEType, "file_size": f.size}
	}
	key := "message"
	if m.Chat.Type == "channel" {
		key = "channel_post"
	}
	updateID = s.pushLocked(map[string]any{key: msg})
	return updateID, messageID
}

// PushRaw queues an update given as raw JSON; %d in it is replaced by the
// update id. It returns the update id.
func (s *Server) PushRaw(format string) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	id := s.nextID
	s.nextID++
	raw := strings.ReplaceAll(format, "%d", strconv.FormatInt(id, 10))
	s.queueLocked(id, json.RawMessage(raw))
	return id
}

func (s *Server) pushLocked(body map[string]any) int64 {
	id := s.nextID
	s.nextID++
	body["update_id"] = id
	raw, err := json.Marshal(body)
	if err != nil {
		s.t.Errorf("fakebot: marshal update: %v", err)
	}
	s.queueLocked(id, raw)
	return id
}

func (s *Server) queueLocked(id int64, raw json.RawMessage) {
	s.updates = append(s.updates, raw)
	s.ids = append(s.ids, id)
	close(s.wake)
	s.wake = make(chan struct{})
}

// Update returns the raw JSON of a queued or delivered update, for
// webhook tests.
func (s *Server) Update(id int64) []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, u := range s.ids {
		if u == id {
			return s.updates[i]
		}
	}
	return nil
}

// Acked reports whether the bot confirmed update id (asked for a later
// offset).
func (s *Server) Acked(id int64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.confirmed > id
}

// Drop aborts the open long polls and the next two getUpdates requests,
// like a network failure.
func (s *Server) Drop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	close(s.dropped)
	s.dropped = make(chan struct{})
	s.abortNext = 2
}

// Polling reports whether a getUpdates request is being held open: the
// gateway is in its long poll (Polls counts a request only once answered,
// which for an idle bot is the poll's timeout later).
func (s *Server) Polling() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.holding > 0
}

// Polls returns how many getUpdates requests were answered or aborted.
func (s *Server) Polls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.polls
}

// Fail makes the next call of method fail with the HTTP code and
// description (retryAfter > 0 adds parameters.retry_after).
func (s *Server) Fail(method string, code int, desc string, retryAfter int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fails[method] = append(s.fails[method], failure{code: code, desc: desc, retryAfter: retryAfter})
}

// Refuse makes every later call of method fail with the HTTP code and
// description, as a Bot API server that does not have the method answers
// (404 "Not Found: method not found"), or one that does not let this bot
// use it.
func (s *Server) Refuse(method string, code int, desc string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.refused[method] = failure{code: code, desc: desc}
}

// Drafts returns the drafts streamed to chat, in order.
func (s *Server) Drafts(chat int64) []Draft {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Draft
	for _, d := range s.drafts {
		if d.ChatID == chat {
			out = append(out, d)
		}
	}
	return out
}

// Commands returns the names of the command menu last registered for
// scope, as the Bot API names scopes ("default", "all_private_chats",
// "all_group_chats", "all_chat_administrators"), or "chat:<id>",
// "chat_administrators:<id>", "chat_member:<chat id>:<user id>"; nil when
// none was.
func (s *Server) Commands(scope string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.menus[scope]...)
}

// Menus returns the scopes that have a command menu.
func (s *Server) Menus() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for scope := range s.menus {
		out = append(out, scope)
	}
	sort.Strings(out)
	return out
}

// RejectHTML makes the next n HTML messages fail with "can't parse
// entities", as Telegram does for markup it does not accept.
func (s *Server) RejectHTML(n int) {
	s.mu.Lock()
	s.rejectHTML += n
	s.mu.Unlock()
}

// Block makes sends to chat fail with 403 (the user blocked the bot).
func (s *Server) Block(chat int64) {
	s.mu.Lock()
	s.blocked[chat] = true
	s.mu.Unlock()
}

// AddFile stores a file users can send; size is what Telegram reports
// (len(data) when 0). It returns the file id.
func (s *Server) AddFile(name string, data []byte, size int64) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	id := fmt.Sprintf("file%d", len(s.files)+1)
	if size == 0 {
		size = int64(len(data))
	}
	s.files[id] = &file{id: id, path: "documents/" + id + "_" + name, data: data, size: size}
	return id
}

// Sent returns what the bot sent and edited, in order.
func (s *Server) Sent() []Sent {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Sent(nil), s.sent...)
}

// Calls returns the requests for method ("" for all).
func (s *Server) Calls(method string) []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Call
	for _, c := range s.calls {
		if method == "" || c.Method == method {
			out = append(out, c)
		}
	}
	return out
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	if rest, ok := strings.CutPrefix(r.URL.Path, "/file/bot"); ok {
		s.serveFile(w, r, rest)
		return
	}
	rest, ok := strings.CutPrefix(r.URL.Path, "/bot")
	if !ok {
		http.NotFound(w, r)
		return
	}
	token, method, ok := strings.Cut(rest, "/")
	if !ok || token != Token {
		reply(w, http.StatusUnauthorized, "Unauthorized", 0, nil)
		return
	}
	params, uploads, err := readParams(r)
	if err != nil {
		reply(w, http.StatusBadRequest, "Bad Request: "+err.Error(), 0, nil)
		return
	}
	s.mu.Lock()
	s.calls = append(s.calls, Call{Method: method, Params: params, At: time.Now()})
	var fail *failure
	if q := s.fails[method]; len(q) > 0 {
		fail, s.fails[method] = &q[0], q[1:]
	} else if f, ok := s.refused[method]; ok {
		fail = &f
	}
	hold := s.holds[method]
	s.mu.Unlock()
	if hold != nil {
		select {
		case <-hold:
		case <-r.Context().Done():
			return
		}
	}
	if fail != nil {
		reply(w, fail.code, fail.desc, fail.retryAfter, nil)
		return
	}
	switch method {
	case "getMe":
		reply(w, 200, "", 0, map[string]any{"id": BotID, "is_bot": true, "first_name": "Nano", "username": BotUsername, "can_join_groups": true})
	case "getUpdates":
		s.getUpdates(w, r, params)
	case "deleteWebhook", "setWebhook", "setMessageReaction", "answerCallbackQuery":
		reply(w, 200, "", 0, true)
	case "setMyCommands":
		s.setMyCommands(w, params)
	case "sendMessageDraft":
		s.sendMessageDraft(w, params)
	case "sendRichMessage":
		s.sendRichMessage(w, params)
	case "sendChatAction":
		if s.isBlocked(params["chat_id"]) {
			reply(w, 403, "Forbidden: bot was blocked by the user", 0, nil)
			return
		}
		reply(w, 200, "", 0, true)
	case "sendMessage", "sendPhoto", "sendDocument", "sendVoice", "sendAudio":
		s.sendMessage(w, method, params, uploads)
	case "editMessageText":
		s.editMessage(w, params)
	case "getFile":
		s.getFile(w, params)
	default:
		reply(w, 404, "Not Found: method not found", 0, nil)
	}
}

func (s *Server) getUpdates(w http.ResponseWriter, r *http.Request, p map[string]string) {
	offset, _ := strconv.ParseInt(p["offset"], 10, 64)
	timeout, _ := strconv.Atoi(p["timeout"])
	limit, _ := strconv.Atoi(p["limit"])
	if limit <= 0 || limit > 100 {
		limit = 100
	}
	deadline := time.NewTimer(time.Duration(timeout) * time.Second)
	defer deadline.Stop()
	for {
		s.mu.Lock()
		if s.abortNext > 0 {
			s.abortNext--
			s.polls++
			s.mu.Unlock()
			panic(http.ErrAbortHandler) // the connection just breaks
		}
		if offset > s.confirmed {
			s.confirmed = offset
		}
		// Confirmed updates are forgotten.
		for len(s.ids) > 0 && s.ids[0] < s.confirmed {
			s.ids, s.updates = s.ids[1:], s.updates[1:]
		}
		var ready []json.RawMessage
		for i, id := range s.ids {
			if id >= offset && len(ready) < limit {
				ready = append(ready, s.updates[i])
			}
		}
		wake, dropped := s.wake, s.dropped
		if len(ready) > 0 {
			s.polls++
			s.mu.Unlock()
			reply(w, 200, "", 0, ready)
			return
		}
		s.holding++
		s.mu.Unlock()
		select {
		case <-wake:
			s.unhold()
		case <-deadline.C:
			s.unhold()
			s.mu.Lock()
			s.polls++
			s.mu.Unlock()
			reply(w, 200, "", 0, []json.RawMessage{})
			return
		case <-dropped:
			s.unhold()
			s.mu.Lock()
			s.polls++
			s.mu.Unlock()
			panic(http.ErrAbortHandler)
		case <-r.Context().Done():
			s.unhold()
			return
		}
	}
}

// unhold ends one held long poll.
func (s *Server) unhold() {
	s.mu.Lock()
	s.holding--
	s.mu.Unlock()
}

func (s *Server) isBlocked(chat string) bool {
	id, _ := strconv.ParseInt(chat, 10, 64)
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.blocked[id]
}

func (s *Server) sendMessage(w http.ResponseWriter, method string, p map[string]string, uploads map[string]*Upload) {
	chat, err := strconv.ParseInt(p["chat_id"], 10, 64)
	if err != nil {
		reply(w, 400, "Bad Request: chat not found", 0, nil)
		return
	}
	if s.isBlocked(p["chat_id"]) {
		reply(w, 403, "Forbidden: bot was blocked by the user", 0, nil)
		return
	}
	text, limit := p["text"], MessageLimit
	var up *Upload
	if method != "sendMessage" {
		text, limit = p["caption"], 1024
		field := map[string]string{"sendPhoto": "photo", "sendDocument": "document", "sendVoice": "voice", "sendAudio": "audio"}[method]
		up = uploads[field]
		if up == nil && p[field] == "" {
			reply(w, 400, "Bad Request: there is no "+field+" in the request", 0, nil)
			return
		}
		if up == nil {
			up = &Upload{Field: field, Name: p[field]}
		}
	} else if strings.TrimSpace(text) == "" {
		reply(w, 400, "Bad Request: message text is empty", 0, nil)
		return
	}
	visible, rendered, ok := s.render(w, text, p["parse_mode"], limit)
	if !ok {
		return
	}
	buttons, ok := inlineKeyboard(w, p["reply_markup"])
	if !ok {
		return
	}
	thread, _ := strconv.ParseInt(p["message_thread_id"], 10, 64)
	replyTo, ok := replyParameters(w, p["reply_parameters"])
	if !ok {
		return
	}
	s.store(w, Sent{Method: method, ChatID: chat, Text: text, ParseMode: p["parse_mode"], Visible: visible, Rendered: rendered, ReplyTo: replyTo, ThreadID: thread, Upload: up, Buttons: buttons})
}

// replyParameters reads reply_parameters; it writes the error reply and
// reports false when they do not parse.
func replyParameters(w http.ResponseWriter, raw string) (messageID int64, ok bool) {
	if raw == "" {
		return 0, true
	}
	var v struct {
		MessageID int64 `json:"message_id"`
	}
	if err := json.Unmarshal([]byte(raw), &v); err != nil {
		reply(w, 400, "Bad Request: can't parse reply parameters JSON object", 0, nil)
		return 0, false
	}
	return v.MessageID, true
}

// store keeps m as the chat's next message and answers with it.
func (s *Server) store(w http.ResponseWriter, m Sent) {
	s.mu.Lock()
	s.msgSeq[m.ChatID]++
	m.MessageID, m.At = s.msgSeq[m.ChatID], time.Now()
	s.sent = append(s.sent, m)
	s.msgs[[2]int64{m.ChatID, m.MessageID}] = &m
	s.mu.Unlock()
	reply(w, 200, "", 0, map[string]any{
		"message_id": m.MessageID, "date": m.At.Unix(), "chat": map[string]any{"id": m.ChatID, "type": "private"},
		"from": map[string]any{"id": BotID, "is_bot": true, "first_name": "Nano", "username": BotUsername},
		"text": m.Visible,
	})
}

// render checks text as Telegram would and writes the error reply if it
// fails.
func (s *Server) render(w http.ResponseWriter, text, parseMode string, limit int) (visible, rendered string, ok bool) {
	visible, rendered = text, text
	if strings.EqualFold(parseMode, "HTML") {
		s.mu.Lock()
		reject := s.rejectHTML > 0
		if reject {
			s.rejectHTML--
		}
		s.mu.Unlock()
		var err error
		if !reject {
			visible, rendered, err = ParseHTML(text)
		} else {
			err = fmt.Errorf("unsupported start tag \"foo\" at byte offset 0")
		}
		if err != nil {
			reply(w, 400, "Bad Request: can't parse entities: "+err.Error(), 0, nil)
			return "", "", false
		}
	} else if parseMode != "" {
		reply(w, 400, "Bad Request: unsupported parse_mode", 0, nil)
		return "", "", false
	}
	if utf8.RuneCountInString(visible) > limit {
		reply(w, 400, "Bad Request: message is too long", 0, nil)
		return "", "", false
	}
	return visible, rendered, true
}

func (s *Server) editMessage(w http.ResponseWriter, p map[string]string) {
	chat, _ := strconv.ParseInt(p["chat_id"], 10, 64)
	id, _ := strconv.ParseInt(p["message_id"], 10, 64)
	s.mu.Lock()
	cur, ok := s.msgs[[2]int64{chat, id}]
	var old Sent
	if ok {
		old = *cur
	}
	s.mu.Unlock()
	if !ok {
		reply(w, 400, "Bad Request: message to edit not found", 0, nil)
		return
	}
	visible, rendered, valid := s.render(w, p["text"], p["parse_mode"], MessageLimit)
	if !valid {
		return
	}
	if visible == old.Visible && p["text"] == old.Text {
		reply(w, 400, "Bad Request: message is not modified: specified new message content and reply markup are exactly the same as a current content and reply markup of the message", 0, nil)
		return
	}
	s.mu.Lock()
	m := Sent{Method: "editMessageText", ChatID: chat, MessageID: id, Edit: true, Text: p["text"], ParseMode: p["parse_mode"], Visible: visible, Rendered: rendered, ThreadID: old.ThreadID, At: time.Now()}
	s.sent = append(s.sent, m)
	s.msgs[[2]int64{chat, id}] = &m
	s.mu.Unlock()
	reply(w, 200, "", 0, map[string]any{"message_id": id, "date": time.Now().Unix(), "chat": map[string]any{"id": chat, "type": "private"}, "text": visible})
}

func (s *Server) getFile(w http.ResponseWriter, p map[string]string) {
	s.mu.Lock()
	f, ok := s.files[p["file_id"]]
	s.mu.Unlock()
	if !ok {
		reply(w, 400, "Bad Request: invalid file_id", 0, nil)
		return
	}
	if f.size > 20<<20 {
		reply(w, 400, "Bad Request: file is too big", 0, nil)
		return
	}
	reply(w, 200, "", 0, map[string]any{"file_id": f.id, "file_unique_id": "u" + f.id, "file_size": f.size, "file_path": f.path})
}

func (s *Server) serveFile(w http.ResponseWriter, r *http.Request, rest string) {
	token, path, ok := strings.Cut(rest, "/")
	if !ok || token != Token {
		http.Error(w, "Unauthorized", http.StatusUnauthorized)
		return
	}
	s.mu.Lock()
	var data []byte
	for _, f := range s.files {
		if f.path == path {
			data = f.data
		}
	}
	s.mu.Unlock()
	if data == nil {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	_, _ = w.Write(data)
}

// readParams reads a request's parameters the ways the Bot API accepts
// them: query string, urlencoded or multipart form, JSON body.
func readParams(r *http.Request) (map[string]string, map[string]*Upload, error) {
	params := map[string]string{}
	uploads := map[string]*Upload{}
	for k, v := range r.URL.Query() {
		params[k] = v[0]
	}
	ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	switch ct {
	case "application/json":
		var body map[string]any
		dec := json.NewDecoder(r.Body)
		dec.UseNumber()
		if err := dec.Decode(&body); err != nil && err != io.EOF {
			return nil, nil, fmt.Errorf("can't parse JSON: %w", err)
		}
		for k, v := range body {
			switch v := v.(type) {
			case string:
				params[k] = v
			case json.Number:
				params[k] = v.String()
			default:
				b, _ := json.Marshal(v)
				params[k] = string(b)
			}
		}
	case "multipart/form-data":
		if err := r.ParseMultipartForm(64 << 20); err != nil {
			if strings.HasSuffix(err.Error(), "EOF") {
				break // an empty body: no parameters (the library sends that for getMe)
			}
			return nil, nil, err
		}
		for k, v := range r.MultipartForm.Value {
			params[k] = v[0]
		}
		for k, fhs := range r.MultipartForm.File {
			f, err := fhs[0].Open()
			if err != nil {
				return nil, nil, err
			}
			data, err := io.ReadAll(f)
			f.Close()
			if err != nil {
				return nil, nil, err
			}
			uploads[k] = &Upload{Field: k, Name: fhs[0].Filename, Data: data}
		}
	case "application/x-www-form-urlencoded":
		if err := r.ParseForm(); err != nil {
			return nil, nil, err
		}
		for k, v := range r.PostForm {
			params[k] = v[0]
		}
	}
	return params, uploads, nil
}

func reply(w http.ResponseWriter, code int, desc string, retryAfter int, result any) {
	body := map[string]any{"ok": code == 200}
	if code == 200 {
		body["result"] = result
	} else {
		body["error_code"] = code
		body["description"] = desc
		if retryAfter > 0 {
			body["parameters"] = map[string]any{"retry_after": retryAfter}
		}
	}
	var buf bytes.Buffer
	_ = json.NewEncoder(&buf).Encode(body)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_, _ = w.Write(buf.Bytes())
}

func userJSON(u User) map[string]any {
	m := map[string]any{"id": u.ID, "is_bot": u.IsBot, "first_name": u.FirstName}
	if u.FirstName == "" {
		m["first_name"] = "User"
	}
	if u.Username != "" {
		m["username"] = u.Username
	}
	return m
}

func chatJSON(c Chat) map[string]any {
	m := map[string]any{"id": c.ID, "type": c.Type}
	if c.Title != "" {
		m["title"] = c.Title
	}
	if c.IsForum {
		m["is_forum"] = true
	}
	return m
}

// entities finds what Telegram would mark in a user's text: a bot command
// at the start and @mentions, with offsets in UTF-16 code units.
func entities(text string) []map[string]any {
	var out []map[string]any
	u16 := func(s string) int { return len(utf16.Encode([]rune(s))) }
	isWord := func(r byte) bool {
		return r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z'
	}
	for i := 0; i < len(text); i++ {
		c := text[i]
		if (c == '/' && i == 0) || (c == '@' && (i == 0 || !isWord(text[i-1]))) {
			j := i + 1
			for j < len(text) && (isWord(text[j]) || (c == '/' && text[j] == '@')) {
				j++
			}
			if j-i < 2 {
				continue
			}
			typ := "mention"
			if c == '/' {
				typ = "bot_command"
			}
			out = append(out, map[string]any{"type": typ, "offset": u16(text[:i]), "length": u16(text[i:j])})
			i = j - 1
		}
	}
	return out
}
