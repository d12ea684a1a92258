package webui

import (
	"cmp"
	"errors"
	"net/http"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/nanobot-go/nanobot/agent/session"
	"github.com/nanobot-go/nanobot/providers"
)

const (
	// maxListed bounds a listing (newest first).
	maxListed = 500
	// toolPreview is how much of a tool result the history shows before
	// "show all".
	toolPreview = 1500
)

// sessionInfo is one row of the conversations sidebar.
type sessionInfo struct {
	Key       string    `json:"key"`
	Channel   string    `json:"channel"`
	ChatID    string    `json:"chatId"`
	Title     string    `json:"title"`
	UpdatedAt time.Time `json:"updatedAt"`
	Messages  int       `json:"messages"`
	// Chatable: a web session, which the page can continue over /ws.
	Chatable bool `json:"chatable"`
}

// message is one stored message as the history view shows it.
type message struct {
	Role string `json:"role"`
	// HTML is the rendered, sanitised Markdown of user and assistant text.
	HTML string `json:"html,omitempty"`
	// Text is a tool result's plain text (Truncated: cut to a preview;
	// Length is the whole length in characters).
	Text       string     `json:"text,omitempty"`
	Truncated  bool       `json:"truncated,omitempty"`
	Length     int        `json:"length,omitempty"`
	ToolCalls  []toolCall `json:"toolCalls,omitempty"`
	ToolCallID string     `json:"toolCallId,omitempty"`
	Name       string     `json:"name,omitempty"`
	Time       string     `json:"time,omitempty"`
}

type toolCall struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

func describe(sess *session.Session, messages []providers.Message) sessionInfo {
	ch, chat := sess.Origin()
	return sessionInfo{Key: sess.Key, Channel: ch, ChatID: chat, Title: sess.Title(), UpdatedAt: sess.Updated(),
		Messages: len(messages), Chatable: ch == "web"}
}

// listSessions is GET /api/sessions?q=: every channel's conversations,
// newest first; q filters by title and message text (case-insensitive).
func (s *Server) listSessions(w http.ResponseWriter, r *http.Request) {
	st := s.o.Sessions
	infos, err := st.List(r.Context())
	if err != nil {
		s.internalError(w, "list sessions", err, "could not list the conversations")
		return
	}
	slices.SortFunc(infos, func(a, b session.Info) int { return b.UpdatedAt.Compare(a.UpdatedAt) })
	q := strings.ToLower(strings.TrimSpace(r.URL.Query().Get("q")))
	out := []sessionInfo{}
	for _, in := range infos {
		if len(out) >= maxListed {
			break
		}
		sess, err := st.Load(r.Context(), in.Key)
		if err != nil {
			s.log.Warn("workbench: load session", "session", in.Key, "err", err)
			continue
		}
		msgs := sess.Tail(sess.Len())
		if len(msgs) == 0 {
			continue // archived by /new or the workbench: nothing to show
		}
		d := describe(sess, msgs)
		if d.UpdatedAt.IsZero() {
			d.UpdatedAt = in.UpdatedAt
		}
		if q != "" && !matches(q, d.Title, msgs) {
			continue
		}
		out = append(out, d)
	}
	slices.SortStableFunc(out, func(a, b sessionInfo) int { return cmp.Compare(b.UpdatedAt.UnixNano(), a.UpdatedAt.UnixNano()) })
	writeJSON(w, http.StatusOK, map[string]any{"sessions": out})
}

func matches(q, title string, msgs []providers.Message) bool {
	if strings.Contains(strings.ToLower(title), q) {
		return true
	}
	for _, m := range msgs {
		if (m.Role == "user" || m.Role == "assistant") && strings.Contains(strings.ToLower(m.Text()), q) {
			return true
		}
	}
	return false
}

// loadExisting loads the session named by the {key} path value, answering
// 404 when nothing is stored under it.
func (s *Server) loadExisting(w http.ResponseWriter, r *http.Request) (session.Store, *session.Session) {
	st := s.o.Sessions
	key := r.PathValue("key")
	sess, err := st.Load(r.Context(), key)
	if err != nil {
		writeError(w, http.StatusBadRequest, "key", "cannot load conversation "+truncate(key, 100)+": "+err.Error())
		return nil, nil
	}
	if sess.Len() == 0 { // never written, or archived by /new
		writeError(w, http.StatusNotFound, "key", "no conversation "+truncate(key, 100))
		return nil, nil
	}
	return st, sess
}

// getSession is GET /api/sessions/{key}: the whole history, read-only,
// Markdown rendered on the server.
func (s *Server) getSession(w http.ResponseWriter, r *http.Request) {
	_, sess := s.loadExisting(w, r)
	if sess == nil {
		return
	}
	msgs := sess.Tail(sess.Len())
	out := make([]message, 0, len(msgs))
	for _, m := range msgs {
		v := message{Role: m.Role, ToolCallID: m.ToolCallID, Name: m.Name, Time: m.Timestamp}
		switch m.Role {
		case "tool":
			text := m.Text()
			v.Length = utf8.RuneCountInString(text)
			if v.Length > toolPreview && r.URL.Query().Get("full") != m.ToolCallID {
				text, v.Truncated = string([]rune(text)[:toolPreview]), true
			}
			v.Text = text
		default:
			if t := m.Text(); t != "" {
				v.HTML = s.render.HTML(t)
			}
		}
		for _, tc := range m.ToolCalls {
			v.ToolCalls = append(v.ToolCalls, toolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments})
		}
		out = append(out, v)
	}
	writeJSON(w, http.StatusOK, map[string]any{"session": describe(sess, msgs), "messages": out})
}

// renameSession is PATCH /api/sessions/{key} {"title": "..."}.
func (s *Server) renameSession(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Title string `json:"title"`
	}
	if !readJSON(w, r, &body) {
		return
	}
	title := strings.TrimSpace(body.Title)
	if title == "" || utf8.RuneCountInString(title) > 200 || strings.ContainsAny(title, "\r\n") {
		writeError(w, http.StatusBadRequest, "title", "want one line of 1 to 200 characters")
		return
	}
	st, sess := s.loadExisting(w, r)
	if sess == nil {
		return
	}
	if err := st.SetMetadata(r.Context(), sess, session.MetaTitle, title); err != nil {
		s.internalError(w, "rename session", err, "could not rename the conversation", "session", sess.Key)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"session": describe(sess, sess.Tail(sess.Len()))})
}

// ErrBusy is what Options.Reset returns (wrapped) for a conversation that
// is answering or has messages waiting.
var ErrBusy = errors.New("the conversation is answering or has messages waiting")

// deleteSession is DELETE /api/sessions/{key}: the conversation is set
// aside by the path /new takes (Options.Reset: consolidated into memory,
// then archived; the archive stays on disk).
func (s *Server) deleteSession(w http.ResponseWriter, r *http.Request) {
	st, sess := s.loadExisting(w, r)
	if sess == nil {
		return
	}
	var err error
	if s.o.Reset != nil {
		err = s.o.Reset(r.Context(), sess.Key)
	} else {
		// No agent in this process (a channels-only cluster role): archive
		// without consolidating; the worker's memory never saw this chat.
		err = st.Archive(r.Context(), sess)
	}
	switch {
	case errors.Is(err, ErrBusy):
		writeError(w, http.StatusConflict, "key", "cannot delete "+truncate(sess.Key, 100)+" now: "+ErrBusy.Error()+" (press Stop, or try again when it is done)")
		return
	case err != nil:
		s.internalError(w, "archive session", err, "could not archive the conversation", "session", sess.Key)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"archived": sess.Key})
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
