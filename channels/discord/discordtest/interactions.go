package discordtest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// Discord's interaction limits: the first response within three seconds,
// the token good for fifteen minutes.
const (
	responseWindow = 3 * time.Second
	tokenLifetime  = 15 * time.Minute
)

// Callback is the bot's first response to an interaction.
type Callback struct {
	// Type is the response type: 4 a message, 5 deferred ("thinking…"),
	// 6 a deferred update of a button's message.
	Type int
	// Content and Flags are the message of a type 4 response (flag 64:
	// only the asker sees it).
	Content string
	Flags   int
	At      time.Time
	Seq     int
}

// interaction is one INTERACTION_CREATE the fake sent.
type interaction struct {
	id, token, channel string
	pushed             time.Time
	callback           *Callback
	original           string // the response message's id, once it exists
	withdrawn          bool   // the original response was deleted
	expired            bool
}

// newInteraction records an interaction about to be pushed; f.mu held.
func (f *Server) newInteraction(channel string) *interaction {
	f.nextID++
	id := strconv.FormatInt(f.nextID, 10)
	in := &interaction{id: id, token: "itoken-" + id, channel: channel, pushed: time.Now()}
	f.interactions[id] = in
	f.byToken[in.token] = in
	return in
}

// interactionBase is the part of an INTERACTION_CREATE payload every
// kind shares: who, where, the token.
func interactionBase(in *interaction, kind int, guild string, user User) map[string]any {
	d := map[string]any{"id": in.id, "application_id": AppID, "type": kind, "token": in.token, "version": 1, "channel_id": in.channel}
	if guild != "" {
		d["guild_id"] = guild
		d["member"] = map[string]any{"user": user, "roles": []string{}}
	} else {
		d["user"] = user
	}
	return d
}

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
	if btn == nil {
		f.mu.Unlock()
		f.t.Errorf("discordtest: press %q: no such button on message %s in %s", label, messageID, channel)
		return ""
	}
	in := f.newInteraction(channel)
	f.mu.Unlock()
	d := interactionBase(in, 3, guild, user)
	d["message"] = map[string]any{"id": messageID, "channel_id": channel, "author": Bot, "content": ""}
	d["data"] = map[string]any{"custom_id": btn.CustomID, "component_type": 2}
	raw, _ := json.Marshal(d)
	f.pushEvent("INTERACTION_CREATE", raw)
	return in.id
}

// Option is a value given to a slash command's option.
type Option struct {
	Name, Value string
}

// Invoke queues the INTERACTION_CREATE of user running the slash command
// name with options in channel (guild "" for a direct message) and
// returns the interaction id. The test fails when no such command is
// registered where it is used (globally, or in the guild), or an option
// is not one of the command's: Discord offers only what was registered.
func (f *Server) Invoke(channel, guild string, user User, name string, options ...Option) string {
	f.mu.Lock()
	cmd, ok := f.lookup(guild, name)
	if !ok {
		f.mu.Unlock()
		f.t.Errorf("discordtest: invoke /%s: not registered (guild %q)", name, guild)
		return ""
	}
	var opts []map[string]any
	for _, o := range options {
		known := false
		for _, co := range cmd.Options {
			known = known || co.Name == o.Name
		}
		if !known {
			f.mu.Unlock()
			f.t.Errorf("discordtest: invoke /%s: no option %q", name, o.Name)
			return ""
		}
		opts = append(opts, map[string]any{"name": o.Name, "type": 3, "value": o.Value})
	}
	in := f.newInteraction(channel)
	f.mu.Unlock()
	d := interactionBase(in, 2, guild, user)
	data := map[string]any{"id": cmd.ID, "name": name, "type": 1}
	if opts != nil {
		data["options"] = opts
	}
	d["data"] = data
	raw, _ := json.Marshal(d)
	f.pushEvent("INTERACTION_CREATE", raw)
	return in.id
}

// lookup finds a registered command usable in guild; f.mu held.
func (f *Server) lookup(guild, name string) (AppCommand, bool) {
	scopes := []string{""}
	if guild != "" {
		scopes = append(scopes, guild)
	}
	for _, sc := range scopes {
		for _, c := range f.commands[sc] {
			if c.Name == name {
				return c, true
			}
		}
	}
	return AppCommand{}, false
}

// Answered reports whether the interaction id got its callback.
func (f *Server) Answered(id string) bool {
	_, ok := f.Callback(id)
	return ok
}

// Callback returns the bot's first response to the interaction id.
func (f *Server) Callback(id string) (Callback, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	in := f.interactions[id]
	if in == nil || in.callback == nil {
		return Callback{}, false
	}
	return *in.callback, true
}

// Withdrawn reports whether the bot deleted the interaction's original
// response.
func (f *Server) Withdrawn(id string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	in := f.interactions[id]
	return in != nil && in.withdrawn
}

// Expire makes the interaction's token invalid, as fifteen minutes do.
func (f *Server) Expire(id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if in := f.interactions[id]; in != nil {
		in.expired = true
	}
}

func writeError(w http.ResponseWriter, status, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	fmt.Fprintf(w, `{"message":%q,"code":%d}`, msg, code)
}

// interactionCallback takes the bot's first response to an interaction:
// once, within three seconds, with the interaction's own token.
func (f *Server) interactionCallback(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Type int `json:"type"`
		Data *struct {
			Content string `json:"content"`
			Flags   int    `json:"flags"`
		} `json:"data"`
	}
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil || body.Type < 4 || body.Type > 9 {
		writeError(w, http.StatusBadRequest, 50035, "Invalid interaction response")
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	in := f.interactions[r.PathValue("id")]
	switch {
	case in == nil || in.token != r.PathValue("token") || time.Since(in.pushed) > responseWindow:
		writeError(w, http.StatusNotFound, 10062, "Unknown interaction")
		return
	case in.callback != nil:
		writeError(w, http.StatusBadRequest, 40060, "Interaction has already been acknowledged.")
		return
	}
	cb := &Callback{Type: body.Type, At: time.Now(), Seq: f.seq1()}
	if body.Data != nil {
		cb.Content, cb.Flags = body.Data.Content, body.Data.Flags
	}
	in.callback = cb
	if body.Type == 4 {
		f.nextID++
		in.original = strconv.FormatInt(f.nextID, 10)
		f.sent = append(f.sent, Sent{ChannelID: in.channel, MessageID: in.original, Content: cb.Content, Flags: cb.Flags, Interaction: in.id, At: cb.At, Seq: f.seq1()})
	}
	w.WriteHeader(http.StatusNoContent)
}

// webhookInteraction is the interaction a webhook route's token belongs
// to, or nil after writing the error Discord gives: an unknown or expired
// token, the wrong application, or (for anything but a type 4 answer's
// edits) no response given yet.
func (f *Server) webhookInteraction(w http.ResponseWriter, r *http.Request) *interaction {
	in := f.byToken[r.PathValue("token")]
	switch {
	case in == nil || in.expired || time.Since(in.pushed) > tokenLifetime || r.PathValue("app") != AppID:
		writeError(w, http.StatusUnauthorized, 50027, "Invalid Webhook Token")
		return nil
	case in.callback == nil:
		writeError(w, http.StatusNotFound, 10008, "Unknown Message")
		return nil
	}
	return in
}

// webhookEdit edits the original response (completing a deferred one) or
// a follow-up.
func (f *Server) webhookEdit(w http.ResponseWriter, r *http.Request) {
	var b messageBody
	if err := json.NewDecoder(r.Body).Decode(&b); err != nil {
		writeError(w, http.StatusBadRequest, 50035, "bad json")
		return
	}
	if f.limited(w) {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	in := f.webhookInteraction(w, r)
	if in == nil {
		return
	}
	id, edit := r.PathValue("id"), true
	if id == "@original" {
		if in.withdrawn {
			writeError(w, http.StatusNotFound, 10008, "Unknown Message")
			return
		}
		if in.original == "" { // a deferred response shows its message now
			f.nextID++
			in.original, edit = strconv.FormatInt(f.nextID, 10), false
		}
		id = in.original
	} else if !f.webhookMessage(in.id, id) {
		writeError(w, http.StatusNotFound, 10008, "Unknown Message")
		return
	}
	s := Sent{ChannelID: in.channel, MessageID: id, Edit: edit, Content: b.Content, Interaction: in.id, At: time.Now(), Seq: f.seq1()}
	for _, row := range b.Components {
		s.Buttons = append(s.Buttons, row.Components...)
	}
	f.sent = append(f.sent, s)
	writeJSON(w, map[string]any{"id": id, "channel_id": in.channel, "content": b.Content, "author": Bot, "webhook_id": AppID})
}

// webhookMessage reports whether message id was sent through interaction
// iid's webhook; f.mu held.
func (f *Server) webhookMessage(iid, id string) bool {
	for _, s := range f.sent {
		if s.Interaction == iid && s.MessageID == id {
			return true
		}
	}
	return false
}

// webhookDelete deletes the original response (a withdrawn deferral).
func (f *Server) webhookDelete(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	in := f.webhookInteraction(w, r)
	if in == nil {
		return
	}
	if r.PathValue("id") != "@original" || in.withdrawn {
		writeError(w, http.StatusNotFound, 10008, "Unknown Message")
		return
	}
	in.withdrawn = true
	w.WriteHeader(http.StatusNoContent)
}

// followup sends a follow-up message through the interaction's webhook.
func (f *Server) followup(w http.ResponseWriter, r *http.Request) {
	var b messageBody
	if err := json.NewDecoder(r.Body).Decode(&b); err != nil || b.Content == "" {
		writeError(w, http.StatusBadRequest, 50006, "Cannot send an empty message")
		return
	}
	if f.limited(w) {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	in := f.webhookInteraction(w, r)
	if in == nil {
		return
	}
	f.nextID++
	id := strconv.FormatInt(f.nextID, 10)
	s := Sent{ChannelID: in.channel, MessageID: id, Content: b.Content, Interaction: in.id, At: time.Now(), Seq: f.seq1()}
	for _, row := range b.Components {
		s.Buttons = append(s.Buttons, row.Components...)
	}
	f.sent = append(f.sent, s)
	if r.URL.Query().Get("wait") != "true" {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	writeJSON(w, map[string]any{"id": id, "channel_id": in.channel, "content": b.Content, "author": Bot, "webhook_id": AppID})
}
