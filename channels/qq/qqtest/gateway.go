package qqtest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/coder/websocket"
)

// ws is the gateway websocket: Hello, then Identify or Resume, then
// heartbeats until the socket closes.
func (f *Server) ws(w http.ResponseWriter, r *http.Request) {
	conn, err := websocket.Accept(w, r, nil)
	if err != nil {
		return
	}
	defer conn.CloseNow()
	ctx := r.Context()
	hello, _ := json.Marshal(map[string]any{"op": 10, "d": map[string]any{"heartbeat_interval": f.opts.HeartbeatInterval.Milliseconds()}})
	if err := write(ctx, conn, hello); err != nil {
		return
	}
	first, err := readFrame(ctx, conn, 10*time.Second)
	if err != nil {
		return
	}
	switch first.Op {
	case 2:
		if !f.identify(ctx, conn, first.D) {
			return
		}
	case 6:
		if !f.resume(ctx, conn, first.D) {
			return
		}
	default:
		f.mu.Lock()
		f.violate("first frame after Hello was op %d, want Identify or Resume", first.Op)
		f.mu.Unlock()
		conn.Close(4001, "invalid opcode")
		return
	}
	for {
		fr, err := readFrame(ctx, conn, 0)
		if err != nil {
			f.mu.Lock()
			if f.conn == conn {
				f.conn = nil
			}
			f.mu.Unlock()
			return
		}
		if fr.Op != 1 {
			f.mu.Lock()
			f.violate("unexpected op %d on an open session", fr.Op)
			f.mu.Unlock()
			continue
		}
		var seq *int64
		if err := json.Unmarshal(fr.D, &seq); err != nil {
			f.mu.Lock()
			f.violate("heartbeat d %s is not a seq or null", fr.D)
			f.mu.Unlock()
			conn.Close(4002, "invalid payload")
			return
		}
		f.mu.Lock()
		f.heartbeats++
		if seq != nil {
			if *seq > f.seq {
				f.violate("heartbeat reports seq %d, beyond the last sent %d", *seq, f.seq)
			} else if *seq > f.acked {
				f.acked = *seq
			}
		}
		f.mu.Unlock()
		if err := write(ctx, conn, []byte(`{"op":11}`)); err != nil {
			return
		}
	}
}

type gwFrame struct {
	Op int             `json:"op"`
	D  json.RawMessage `json:"d"`
}

// checkToken reports whether "QQBot <tok>" names a valid token.
func (f *Server) checkToken(token string) bool {
	tok, ok := strings.CutPrefix(token, "QQBot ")
	return ok && f.tokens[tok]
}

func (f *Server) identify(ctx context.Context, conn *websocket.Conn, raw json.RawMessage) bool {
	var d struct {
		Token   string `json:"token"`
		Intents int    `json:"intents"`
		Shard   []int  `json:"shard"`
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		conn.Close(4002, "invalid payload")
		return false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case f.closeNextLocked(conn):
		return false
	case !f.checkToken(d.Token):
		conn.Close(4004, "invalid token")
		return false
	case d.Intents&RequiredIntents != RequiredIntents:
		f.violate("Identify with intents %#x, missing %#x", d.Intents, RequiredIntents&^d.Intents)
		conn.Close(4013, "invalid intent")
		return false
	case len(d.Shard) != 2 || d.Shard[0] != 0 || d.Shard[1] != 1:
		f.violate("Identify with shard %v, want [0 1]", d.Shard)
		conn.Close(4010, "invalid shard")
		return false
	}
	f.identifies++
	f.session = fmt.Sprintf("session-%d", f.identifies)
	f.log = nil
	f.replace(conn)
	ready, _ := json.Marshal(map[string]any{"op": 0, "t": "READY", "d": map[string]any{
		"version": 1, "session_id": f.session, "shard": []int{0, 1},
		"user": map[string]any{"id": "bot-user-1", "username": "nanobot-test", "bot": true},
	}})
	f.sendLocked(ready)
	f.flushLocked()
	return true
}

func (f *Server) resume(ctx context.Context, conn *websocket.Conn, raw json.RawMessage) bool {
	var d struct {
		Token     string `json:"token"`
		SessionID string `json:"session_id"`
		Seq       int64  `json:"seq"`
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		conn.Close(4002, "invalid payload")
		return false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closeNextLocked(conn) {
		return false
	}
	if !f.checkToken(d.Token) {
		conn.Close(4004, "invalid token")
		return false
	}
	if f.session == "" || d.SessionID != f.session {
		_ = write(ctx, conn, []byte(`{"op":9,"d":false}`))
		conn.Close(websocket.StatusNormalClosure, "invalid session")
		return false
	}
	if d.Seq > f.seq {
		f.violate("Resume with seq %d beyond the last sent %d", d.Seq, f.seq)
		conn.Close(4007, "invalid seq")
		return false
	}
	f.resumes++
	if d.Seq > f.acked {
		f.acked = d.Seq
	}
	f.replace(conn)
	for _, l := range f.log {
		if l.seq > d.Seq {
			_ = f.writeLocked(l.data)
		}
	}
	f.sendLocked([]byte(`{"op":0,"t":"RESUMED","d":""}`))
	f.flushLocked()
	return true
}

// replace makes conn the bot's socket, closing an older one.
func (f *Server) replace(conn *websocket.Conn) {
	if f.conn != nil && f.conn != conn {
		f.conn.CloseNow()
	}
	f.conn = conn
}

// sendLocked gives a dispatch frame the next seq, logs and writes it.
func (f *Server) sendLocked(body []byte) int64 {
	var m map[string]any
	_ = json.Unmarshal(body, &m)
	f.seq++
	m["s"] = f.seq
	if d, ok := m["d"].(map[string]any); ok {
		if id, ok := d["id"].(string); ok {
			f.seqOf[id] = f.seq
		}
	}
	data, _ := json.Marshal(m)
	f.log = append(f.log, logged{f.seq, data})
	_ = f.writeLocked(data)
	return f.seq
}

func (f *Server) flushLocked() {
	p := f.pending
	f.pending = nil
	for _, body := range p {
		f.sendLocked(body)
	}
}

func (f *Server) writeLocked(data []byte) error {
	if f.conn == nil {
		return fmt.Errorf("no socket")
	}
	return write(context.Background(), f.conn, data)
}

func write(ctx context.Context, conn *websocket.Conn, data []byte) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	return conn.Write(ctx, websocket.MessageText, data)
}

func readFrame(ctx context.Context, conn *websocket.Conn, timeout time.Duration) (gwFrame, error) {
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	_, data, err := conn.Read(ctx)
	if err != nil {
		return gwFrame{}, err
	}
	var fr gwFrame
	if err := json.Unmarshal(data, &fr); err != nil {
		return gwFrame{}, err
	}
	return fr, nil
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
