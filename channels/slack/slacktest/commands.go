package slacktest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"
	"unicode/utf8"
)

// Slash is a slash command a user runs.
type Slash struct {
	// Command is the command as the manifest declares it ("/nanobot").
	Command string
	Text    string
	Channel string
	// ChannelName is Slack's name for the conversation ("directmessage"
	// for a DM, "privategroup" for a private channel); default "general".
	ChannelName string
	User        string
}

// slash is a slash command pushed, for its response_url.
type slash struct {
	used    int
	expires time.Time
}

// Response is a message an app sent to a slash command's response_url.
type Response struct {
	Trigger      string
	Text         string
	ResponseType string // "ephemeral" (the default) or "in_channel"
	At           time.Time
}

// RunSlash queues the slash_commands envelope of the user running c, as
// Socket Mode delivers it, and returns its envelope id and trigger id.
// The command's response_url is served by the fake (five uses within
// thirty minutes, as on Slack).
func (s *Server) RunSlash(c Slash) (envelopeID, trigger string) {
	s.mu.Lock()
	s.nextEnv++
	envelopeID = fmt.Sprintf("env-%d", s.nextEnv)
	trigger = fmt.Sprintf("%d.%d.trigger", time.Now().Unix(), s.nextEnv)
	s.slashes[trigger] = &slash{expires: time.Now().Add(30 * time.Minute)}
	s.mu.Unlock()
	name := c.ChannelName
	if name == "" {
		name = "general"
	}
	frame, _ := json.Marshal(map[string]any{
		"envelope_id": envelopeID, "type": "slash_commands", "accepts_response_payload": true,
		"payload": map[string]any{
			"token": "verification", "team_id": "T1", "team_domain": "test", "channel_id": c.Channel, "channel_name": name,
			"user_id": c.User, "user_name": c.User, "command": c.Command, "text": c.Text, "api_app_id": "A1",
			"is_enterprise_install": false, "response_url": s.URL + "/commands/" + trigger, "trigger_id": trigger,
		},
	})
	s.PushRaw(string(frame))
	return envelopeID, trigger
}

// respond takes a message posted to a response_url.
func (s *Server) respond(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Text         string `json:"text"`
		ResponseType string `json:"response_type"`
	}
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil || body.Text == "" {
		http.Error(w, "no_text", http.StatusBadRequest)
		return
	}
	trigger := r.PathValue("trigger")
	s.mu.Lock()
	defer s.mu.Unlock()
	sl := s.slashes[trigger]
	switch {
	case sl == nil || time.Now().After(sl.expires):
		http.Error(w, "expired_url", http.StatusNotFound)
		return
	case sl.used == 5:
		http.Error(w, "used_url", http.StatusNotFound)
		return
	}
	sl.used++
	if body.ResponseType == "" {
		body.ResponseType = "ephemeral"
	}
	s.responses = append(s.responses, Response{Trigger: trigger, Text: body.Text, ResponseType: body.ResponseType, At: time.Now()})
	_, _ = w.Write([]byte("ok"))
}

// Responses returns what was posted to response_urls, in order.
func (s *Server) Responses() []Response {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Response(nil), s.responses...)
}

// OpenHome queues the app_home_opened event of user opening the app's
// tab ("home" or "messages") and returns its envelope id.
func (s *Server) OpenHome(user, tab string) string {
	s.mu.Lock()
	s.nextEnv++
	env := fmt.Sprintf("env-%d", s.nextEnv)
	ts := s.ts()
	s.mu.Unlock()
	frame, _ := json.Marshal(map[string]any{
		"envelope_id": env, "type": "events_api", "accepts_response_payload": false, "retry_attempt": 0,
		"payload": map[string]any{
			"token": "verification", "team_id": "T1", "api_app_id": "A1", "type": "event_callback",
			"event_id": "Ev" + env, "event_time": time.Now().Unix(),
			"event": map[string]any{"type": "app_home_opened", "user": user, "channel": "D" + user, "tab": tab, "event_ts": ts},
		},
	})
	s.PushRaw(string(frame))
	return env
}

// View is a Home tab published with views.publish.
type View struct {
	User string
	// Blocks are the view's blocks: their type and text (a section's or
	// header's text; "" for a divider).
	Blocks []ViewBlock
}

// ViewBlock is one block of a View.
type ViewBlock struct{ Type, Text string }

// Text is every block's text, one per line.
func (v View) Text() string {
	var out string
	for _, b := range v.Blocks {
		out += b.Text + "\n"
	}
	return out
}

// publish checks a views.publish as Slack does (a home view for a user,
// at most 100 blocks, section text up to 3000 characters, header text
// plain and up to 150) and records it; it returns Slack's error code, or
// "" when it took it. s.mu held.
func (s *Server) publish(r *http.Request) string {
	var req struct {
		UserID string `json:"user_id"`
		View   struct {
			Type   string `json:"type"`
			Blocks []struct {
				Type string `json:"type"`
				Text *struct {
					Type string `json:"type"`
					Text string `json:"text"`
				} `json:"text"`
			} `json:"blocks"`
		} `json:"view"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.UserID == "" {
		return "invalid_arguments"
	}
	if req.View.Type != "home" || len(req.View.Blocks) == 0 || len(req.View.Blocks) > 100 {
		return "invalid_arguments"
	}
	v := View{User: req.UserID}
	for _, b := range req.View.Blocks {
		vb := ViewBlock{Type: b.Type}
		switch b.Type {
		case "divider":
		case "section", "header":
			if b.Text == nil || b.Text.Text == "" {
				return "invalid_blocks"
			}
			n := utf8.RuneCountInString(b.Text.Text)
			if b.Type == "section" && n > 3000 || b.Type == "header" && (n > 150 || b.Text.Type != "plain_text") {
				return "invalid_blocks"
			}
			vb.Text = b.Text.Text
		default:
			return "invalid_blocks"
		}
		v.Blocks = append(v.Blocks, vb)
	}
	s.views = append(s.views, v)
	return ""
}

// Views returns the Home tabs published, in order.
func (s *Server) Views() []View {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]View(nil), s.views...)
}
