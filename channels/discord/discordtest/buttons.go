package discordtest

import (
	"encoding/json"
	"net/http"
	"strconv"
)

// Press queues the INTERACTION_CREATE of user pressing the button labelled
// label on the bot's message messageID in channel (guild "" for a direct
// message) and returns the interaction id. The test fails when the message
// has no such button: Discord only sends the custom_id of buttons shown.
func (f *Server) Press(channel, guild, messageID string, user User, label string) string {
	f.mu.Lock()
	var btn *Button
	for _, s := range f.sent {
		if s.ChannelID == channel && s.MessageID == messageID {
			for i := range s.Buttons {
				if s.Buttons[i].Label == label {
					btn = &s.Buttons[i]
				}
			}
		}
	}
	f.nextID++
	id := strconv.FormatInt(f.nextID, 10)
	f.mu.Unlock()
	if btn == nil {
		f.t.Errorf("discordtest: press %q: no such button on message %s in %s", label, messageID, channel)
		return ""
	}
	d := map[string]any{
		"id": id, "application_id": Bot.ID, "type": 3, "token": "itoken-" + id, "version": 1, "channel_id": channel,
		"message": map[string]any{"id": messageID, "channel_id": channel, "author": Bot, "content": ""},
		"data":    map[string]any{"custom_id": btn.CustomID, "component_type": 2},
	}
	if guild != "" {
		d["guild_id"] = guild
		d["member"] = map[string]any{"user": user, "roles": []string{}}
	} else {
		d["user"] = user
	}
	raw, _ := json.Marshal(d)
	f.pushEvent("INTERACTION_CREATE", raw)
	return id
}

// Answered reports whether the interaction id got its callback.
func (f *Server) Answered(id string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.answered[id]
}

// interactionCallback takes the bot's answer to an interaction.
func (f *Server) interactionCallback(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Type int `json:"type"`
	}
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil || body.Type == 0 {
		http.Error(w, `{"message":"Invalid interaction response"}`, http.StatusBadRequest)
		return
	}
	f.mu.Lock()
	if f.answered == nil {
		f.answered = map[string]bool{}
	}
	f.answered[r.PathValue("id")] = true
	f.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}
