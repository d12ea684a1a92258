package qqtest

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// The token endpoint of bots.qq.com.

func (f *Server) token(w http.ResponseWriter, r *http.Request) {
	var in struct {
		AppID        string `json:"appId"`
		ClientSecret string `json:"clientSecret"`
	}
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]any{"code": 100000, "message": "bad request body"})
		return
	}
	if in.AppID != AppID || in.ClientSecret != Secret {
		// QQ answers 200 with an error code.
		writeJSON(w, http.StatusOK, map[string]any{"code": 100016, "message": "invalid appid or secret"})
		return
	}
	f.mu.Lock()
	f.nextToken++
	tok := fmt.Sprintf("fake-access-token-%04d", f.nextToken)
	f.tokens[tok] = true
	f.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{"access_token": tok, "expires_in": "7200"})
}

func (f *Server) authorized(w http.ResponseWriter, r *http.Request) bool {
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "QQBot ")
	f.mu.Lock()
	valid := ok && f.tokens[tok]
	f.mu.Unlock()
	if !valid {
		writeJSON(w, http.StatusUnauthorized, map[string]any{"code": 11244, "message": "token not exist or expire"})
	}
	return valid
}

func (f *Server) gateway(w http.ResponseWriter, r *http.Request) {
	if !f.authorized(w, r) {
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"url": "ws" + strings.TrimPrefix(f.URL, "http") + "/websocket", "shards": 1,
		"session_start_limit": map[string]int{"total": 1000, "remaining": 999, "reset_after": 86400000, "max_concurrency": 1},
	})
}

func (f *Server) injected(w http.ResponseWriter) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.fail) == 0 {
		return false
	}
	fl := f.fail[0]
	f.fail = f.fail[1:]
	w.Header().Set("Content-Type", "application/json")
	if fl.status == http.StatusTooManyRequests {
		w.Header().Set("Retry-After", "1")
	}
	w.WriteHeader(fl.status)
	fmt.Fprint(w, fl.body)
	return true
}

func qqError(w http.ResponseWriter, status, code int, msg string) {
	writeJSON(w, status, map[string]any{"code": code, "message": msg, "err_code": code, "trace_id": "fake"})
}

type messageBody struct {
	Content  string `json:"content"`
	MsgType  *int   `json:"msg_type"`
	Markdown *struct {
		Content string `json:"content"`
	} `json:"markdown"`
	Media *struct {
		FileInfo string `json:"file_info"`
	} `json:"media"`
	MsgID  string `json:"msg_id"`
	MsgSeq *int   `json:"msg_seq"`
}

func (f *Server) message(w http.ResponseWriter, r *http.Request) {
	kind, target := r.PathValue("kind"), r.PathValue("id")
	if kind != "users" && kind != "groups" {
		qqError(w, http.StatusNotFound, 404, "no such path")
		return
	}
	if !f.authorized(w, r) || f.injected(w) {
		return
	}
	var b messageBody
	if err := json.NewDecoder(r.Body).Decode(&b); err != nil {
		qqError(w, http.StatusBadRequest, 40034001, "invalid json: "+err.Error())
		return
	}
	chat := kind + "/" + target
	s := Sent{Kind: kind, Target: target, MsgID: b.MsgID}
	switch {
	case b.MsgType == nil:
		qqError(w, http.StatusBadRequest, 40034002, "msg_type is required")
		return
	case *b.MsgType == 0 && strings.TrimSpace(b.Content) != "":
		s.Content = b.Content
	case *b.MsgType == 2 && b.Markdown != nil && strings.TrimSpace(b.Markdown.Content) != "":
		s.Content = b.Markdown.Content
	case *b.MsgType == 7 && b.Media != nil && b.Media.FileInfo != "":
		s.FileInfo, s.Content = b.Media.FileInfo, b.Content
	default:
		qqError(w, http.StatusBadRequest, 40034003, "message body does not match msg_type")
		return
	}
	s.MsgType = *b.MsgType
	f.mu.Lock()
	defer f.mu.Unlock()
	if s.FileInfo != "" && f.fileInfos[s.FileInfo] != chat {
		qqError(w, http.StatusBadRequest, 40034004, "file_info was not uploaded to this chat")
		return
	}
	if b.MsgID != "" {
		if f.received[b.MsgID] != chat {
			qqError(w, http.StatusBadRequest, 40034006, "msg_id is not a message of this chat")
			return
		}
		seq := 1 // QQ's default
		if b.MsgSeq != nil {
			seq = *b.MsgSeq
		}
		used := f.replySeqs[b.MsgID]
		for _, u := range used {
			if u == seq {
				qqError(w, http.StatusBadRequest, 40054005, "消息被去重，请检查请求msgseq")
				return
			}
		}
		if len(used) >= 5 {
			qqError(w, http.StatusBadRequest, 40034024, "被动回复次数超过限制") // code chosen by the fake
			return
		}
		f.replySeqs[b.MsgID] = append(used, seq)
		s.MsgSeq = seq
	}
	f.nextID++
	s.ID, s.At = fmt.Sprintf("SENT%d", f.nextID), time.Now()
	f.sent = append(f.sent, s)
	writeJSON(w, http.StatusOK, map[string]any{"id": s.ID, "timestamp": s.At.Unix()})
}

func (f *Server) upload(w http.ResponseWriter, r *http.Request) {
	kind, target := r.PathValue("kind"), r.PathValue("id")
	if kind != "users" && kind != "groups" {
		qqError(w, http.StatusNotFound, 404, "no such path")
		return
	}
	if !f.authorized(w, r) {
		return
	}
	var b struct {
		FileType   int    `json:"file_type"`
		URL        string `json:"url"`
		FileData   string `json:"file_data"`
		SrvSendMsg *bool  `json:"srv_send_msg"`
	}
	if err := json.NewDecoder(r.Body).Decode(&b); err != nil {
		qqError(w, http.StatusBadRequest, 40034001, "invalid json")
		return
	}
	up := Upload{Kind: kind, Target: target, FileType: b.FileType, URL: b.URL}
	switch {
	case b.FileType < 1 || b.FileType > 4:
		qqError(w, http.StatusBadRequest, 40034010, "file_type must be 1 to 4")
		return
	case (b.URL == "") == (b.FileData == ""):
		qqError(w, http.StatusBadRequest, 40034011, "give one of url and file_data")
		return
	case b.SrvSendMsg == nil || *b.SrvSendMsg:
		qqError(w, http.StatusBadRequest, 40034012, "this fake expects srv_send_msg false")
		return
	}
	if b.FileData != "" {
		data, err := base64.StdEncoding.DecodeString(b.FileData)
		if err != nil {
			qqError(w, http.StatusBadRequest, 40034013, "file_data is not base64")
			return
		}
		up.Data = data
	}
	f.mu.Lock()
	f.nextID++
	up.FileInfo = fmt.Sprintf("FILEINFO%d", f.nextID)
	f.fileInfos[up.FileInfo] = kind + "/" + target
	f.uploads = append(f.uploads, up)
	f.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{"file_uuid": "uuid-" + up.FileInfo, "file_info": up.FileInfo, "ttl": 3600})
}

func (f *Server) dms(w http.ResponseWriter, r *http.Request) {
	if !f.authorized(w, r) || f.injected(w) {
		return
	}
	guild := r.PathValue("guild")
	var b struct {
		Content string `json:"content"`
		MsgID   string `json:"msg_id"`
	}
	if err := json.NewDecoder(r.Body).Decode(&b); err != nil || strings.TrimSpace(b.Content) == "" {
		qqError(w, http.StatusBadRequest, 50006, "content is required")
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if b.MsgID != "" && f.received[b.MsgID] != "dms/"+guild {
		qqError(w, http.StatusBadRequest, 40034006, "msg_id is not a message of this chat")
		return
	}
	f.nextID++
	s := Sent{Kind: "dms", Target: guild, ID: fmt.Sprintf("SENT%d", f.nextID), Content: b.Content, MsgID: b.MsgID, At: time.Now()}
	f.sent = append(f.sent, s)
	writeJSON(w, http.StatusOK, map[string]any{"id": s.ID, "guild_id": guild, "channel_id": "ch-" + guild, "content": b.Content})
}

func (f *Server) file(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	file, ok := f.files[r.PathValue("name")]
	f.mu.Unlock()
	if !ok {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", file.ContentType)
	w.Header().Set("Content-Length", strconv.Itoa(len(file.Data)))
	w.Write(file.Data)
}
