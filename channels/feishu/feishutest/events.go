package feishutest

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"strconv"
	"time"
)

// Message is a message event (im.message.receive_v1) to push.
type Message struct {
	// From is the sender's open_id.
	From string
	// UserID is the sender's user_id (optional).
	UserID string
	// ChatID is the chat (default "oc_dm_" + From).
	ChatID string
	// ChatType is p2p (default), group or topic_group.
	ChatType string
	// Type is the message_type (default text).
	Type string
	// Text is the text of a text message ("@_user_1 hi" with Mentions).
	Text string
	// Content replaces the content JSON built from Text.
	Content  string
	Mentions []Mention
	// RootID and ThreadID place the message in a topic.
	RootID, ThreadID string
	// SenderType is user (default) or app.
	SenderType string
	// MessageID is the message's id (default: a new om_… id).
	MessageID string
	// Split sends the payload in this many data frames (sum/seq), the last
	// part first.
	Split int
	// EncryptKey, when set, sends the event encrypted with it.
	EncryptKey string
	// Token is the event header's verification token.
	Token string
}

// Mention is one @mention in a message.
type Mention struct{ Key, OpenID, Name string }

// Pushed are the ids of a pushed event.
type Pushed struct {
	// FrameID is the data frames' message_id header (what Acked takes).
	FrameID string
	// MessageID is the Feishu message id (om_…).
	MessageID string
	ChatID    string
}

// Push sends a message event over the long connection (now, or as soon as
// the adapter connects).
func (s *Server) Push(m Message) Pushed {
	s.mu.Lock()
	defer s.mu.Unlock()
	if m.ChatType == "" {
		m.ChatType = "p2p"
	}
	if m.ChatID == "" {
		m.ChatID = "oc_dm_" + m.From
	}
	if m.Type == "" {
		m.Type = "text"
	}
	if m.SenderType == "" {
		m.SenderType = "user"
	}
	if m.MessageID == "" {
		m.MessageID = s.id("om_in_")
	}
	content := m.Content
	if content == "" {
		b, _ := json.Marshal(map[string]string{"text": m.Text})
		content = string(b)
	}
	var mentions []map[string]any
	for _, mt := range m.Mentions {
		mentions = append(mentions, map[string]any{"key": mt.Key, "name": mt.Name, "tenant_key": "tk1",
			"id": map[string]string{"open_id": mt.OpenID, "union_id": "on_" + mt.OpenID, "user_id": ""}})
	}
	msg := map[string]any{
		"message_id": m.MessageID, "root_id": m.RootID, "parent_id": m.RootID, "thread_id": m.ThreadID,
		"create_time": strconv.FormatInt(time.Now().UnixMilli(), 10), "chat_id": m.ChatID, "chat_type": m.ChatType,
		"message_type": m.Type, "content": content, "mentions": mentions,
	}
	ev := map[string]any{
		"schema": "2.0",
		"header": map[string]any{"event_id": s.id("ev_"), "event_type": "im.message.receive_v1", "create_time": strconv.FormatInt(time.Now().UnixMilli(), 10),
			"token": m.Token, "app_id": AppID, "tenant_key": "tk1"},
		"event": map[string]any{
			"sender":  map[string]any{"sender_id": map[string]string{"open_id": m.From, "user_id": m.UserID, "union_id": "on_" + m.From}, "sender_type": m.SenderType, "tenant_key": "tk1"},
			"message": msg,
		},
	}
	payload, _ := json.Marshal(ev)
	if m.EncryptKey != "" {
		payload, _ = json.Marshal(map[string]string{"encrypt": encrypt(m.EncryptKey, payload)})
	}
	s.chats[m.MessageID] = m.ChatID
	id := s.pushLocked(payload, max(m.Split, 1))
	return Pushed{FrameID: id, MessageID: m.MessageID, ChatID: m.ChatID}
}

// PushRaw sends payload as an event data frame and returns its frame id.
func (s *Server) PushRaw(payload []byte) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.pushLocked(payload, 1)
}

// PushGarbage sends a binary message that is not a Frame.
func (s *Server) PushGarbage() {
	s.mu.Lock()
	defer s.mu.Unlock()
	select {
	case s.outbox <- []byte{0x0a, 0xff, 0xff, 0x01}:
	default:
	}
}

// pushLocked splits payload into parts data frames (s.mu held).
func (s *Server) pushLocked(payload []byte, parts int) string {
	id := s.id("frame-")
	trace := s.id("trace-")
	size := (len(payload) + parts - 1) / parts
	var frames []*frame
	for i := range parts {
		lo, hi := min(i*size, len(payload)), min((i+1)*size, len(payload))
		s.nextID++
		f := &frame{
			SeqID: uint64(1000 + s.nextID), LogID: uint64(5000 + s.nextID), Service: serviceID, Method: 1,
			Headers: [][2]string{{"type", "event"}, {"message_id", id}, {"sum", strconv.Itoa(parts)}, {"seq", strconv.Itoa(i)}, {"trace_id", trace}},
			Payload: append([]byte{}, payload[lo:hi]...), LogIDNew: "log-" + id,
		}
		frames = append(frames, f)
	}
	s.sentFrames[id] = frames
	for i := len(frames) - 1; i >= 0; i-- { // last part first: order must not matter
		s.queue(frames[i])
	}
	return id
}

// encrypt is the platform's event encryption: base64(IV ‖ AES-256-CBC
// (PKCS#7 padded)), key SHA-256(encryptKey).
func encrypt(key string, plain []byte) string {
	k := sha256.Sum256([]byte(key))
	block, _ := aes.NewCipher(k[:])
	pad := aes.BlockSize - len(plain)%aes.BlockSize
	data := append(append([]byte{}, plain...), bytes.Repeat([]byte{byte(pad)}, pad)...)
	out := make([]byte, aes.BlockSize+len(data))
	_, _ = rand.Read(out[:aes.BlockSize])
	cipher.NewCBCEncrypter(block, out[:aes.BlockSize]).CryptBlocks(out[aes.BlockSize:], data)
	return base64.StdEncoding.EncodeToString(out)
}
