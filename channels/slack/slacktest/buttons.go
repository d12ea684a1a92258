package slacktest

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// parseBlocks reads the buttons of a message's blocks, refusing what Slack
// refuses: a button without text or action_id, a value over 2000
// characters, more than 25 elements in an actions block.
func parseBlocks(raw string) ([]Button, error) {
	if raw == "" {
		return nil, nil
	}
	var blocks []struct {
		Type     string `json:"type"`
		Elements []struct {
			Type     string `json:"type"`
			ActionID string `json:"action_id"`
			Value    string `json:"value"`
			Text     struct {
				Type string `json:"type"`
				Text string `json:"text"`
			} `json:"text"`
		} `json:"elements"`
	}
	if err := json.Unmarshal([]byte(raw), &blocks); err != nil {
		return nil, err
	}
	var out []Button
	for _, b := range blocks {
		if b.Type != "actions" {
			continue
		}
		if len(b.Elements) > 25 {
			return nil, errors.New("too many elements")
		}
		for _, e := range b.Elements {
			if e.Type != "button" || e.ActionID == "" || e.Text.Type != "plain_text" || e.Text.Text == "" || len(e.Value) > 2000 {
				return nil, fmt.Errorf("bad button %+v", e)
			}
			out = append(out, Button{ActionID: e.ActionID, Text: e.Text.Text, Value: e.Value})
		}
	}
	return out, nil
}

// Press queues the interactive (block_actions) envelope of user pressing
// the button labelled label on the message ts in channel, and returns the
// envelope id. The test fails when that message has no such button.
func (s *Server) Press(channel, ts, user, label string) string {
	s.mu.Lock()
	var btn *Button
	for _, m := range s.sent {
		if m.Channel == channel && m.TS == ts && !m.Edit {
			for i := range m.Buttons {
				if m.Buttons[i].Text == label {
					btn = &m.Buttons[i]
				}
			}
		}
	}
	s.nextEnv++
	env := fmt.Sprintf("env-%d", s.nextEnv)
	s.mu.Unlock()
	if btn == nil {
		s.t.Errorf("slacktest: press %q: no such button on message %s in %s", label, ts, channel)
		return ""
	}
	now := fmt.Sprintf("%d.%06d", time.Now().Unix(), s.nextEnv) // unique per press, as Slack's are
	frame, _ := json.Marshal(map[string]any{
		"envelope_id": env, "type": "interactive", "accepts_response_payload": false,
		"payload": map[string]any{
			"type":       "block_actions",
			"team":       map[string]any{"id": "T1", "domain": "test"},
			"user":       map[string]any{"id": user, "username": user, "team_id": "T1"},
			"api_app_id": "A1", "token": "verification", "trigger_id": "trig-" + env,
			"container": map[string]any{"type": "message", "message_ts": ts, "channel_id": channel, "is_ephemeral": false},
			"channel":   map[string]any{"id": channel, "name": "chan"},
			"message":   map[string]any{"type": "message", "ts": ts, "user": BotUserID, "text": "approval"},
			"actions": []map[string]any{{
				"type": "button", "action_id": btn.ActionID, "block_id": "b1", "value": btn.Value, "action_ts": now,
				"text": map[string]any{"type": "plain_text", "text": btn.Text},
			}},
		},
	})
	s.PushRaw(string(frame))
	return env
}
