package telegramtest

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// call posts a form to the fake and returns the HTTP status and the
// description of an error.
func call(t *testing.T, s *Server, method string, form url.Values) (int, string) {
	t.Helper()
	resp, err := http.PostForm(s.URL+"/bot"+Token+"/"+method, form)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct {
		Description string `json:"description"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&body)
	return resp.StatusCode, body.Description
}

func TestDraftRules(t *testing.T) {
	s := New(t)
	s.Send(Msg{From: User{ID: 7}, Chat: Chat{ID: -100, Type: "supergroup"}, Text: "hi"})
	for _, tt := range []struct {
		name string
		form url.Values
		want int
	}{
		{"private chat", url.Values{"chat_id": {"7"}, "draft_id": {"3"}, "text": {"<b>so far</b>"}, "parse_mode": {"HTML"}}, 200},
		{"a group", url.Values{"chat_id": {"-100"}, "draft_id": {"3"}, "text": {"x"}}, 400},
		{"no draft id", url.Values{"chat_id": {"7"}, "text": {"x"}}, 400},
		{"draft id zero", url.Values{"chat_id": {"7"}, "draft_id": {"0"}, "text": {"x"}}, 400},
		{"no text", url.Values{"chat_id": {"7"}, "draft_id": {"3"}}, 400},
		{"too long", url.Values{"chat_id": {"7"}, "draft_id": {"3"}, "text": {strings.Repeat("x", MessageLimit+1)}}, 400},
		{"bad HTML", url.Values{"chat_id": {"7"}, "draft_id": {"3"}, "text": {"<b>open"}, "parse_mode": {"HTML"}}, 400},
	} {
		if code, desc := call(t, s, "sendMessageDraft", tt.form); code != tt.want {
			t.Errorf("%s: status %d (%s), want %d", tt.name, code, desc, tt.want)
		}
	}
	d := s.Drafts(7)
	if len(d) != 1 || d[0].DraftID != 3 || d[0].Visible != "so far" {
		t.Errorf("drafts %+v, want the valid one", d)
	}
	s.Refuse("sendMessageDraft", 404, "Not Found: method not found")
	if code, _ := call(t, s, "sendMessageDraft", url.Values{"chat_id": {"7"}, "draft_id": {"3"}, "text": {"x"}}); code != 404 {
		t.Errorf("refused method: status %d, want 404", code)
	}
}

func TestRichMessageRules(t *testing.T) {
	s := New(t)
	for _, tt := range []struct {
		rich string
		want int
	}{
		{`{"markdown":"| a | b |\n|---|---|\n| 1 | 2 |"}`, 200},
		{`{"markdown":"x","html":"<b>x</b>"}`, 400},
		{`{}`, 400},
		{`not json`, 400},
	} {
		if code, desc := call(t, s, "sendRichMessage", url.Values{"chat_id": {"7"}, "rich_message": {tt.rich}}); code != tt.want {
			t.Errorf("%s: status %d (%s), want %d", tt.rich, code, desc, tt.want)
		}
	}
	if sent := s.Sent(); len(sent) != 1 || !sent[0].Rich || !strings.HasPrefix(sent[0].Text, "| a | b |") {
		t.Errorf("sent %+v, want the rich message", sent)
	}
}

func TestCommandScopes(t *testing.T) {
	s := New(t)
	cmds := `[{"command":"new","description":"Start over"}]`
	for _, tt := range []struct {
		scope, key string
		want       int
	}{
		{"", "default", 200},
		{`{"type":"all_group_chats"}`, "all_group_chats", 200},
		{`{"type":"chat","chat_id":-1001234567890}`, "chat:-1001234567890", 200},
		{`{"type":"chat"}`, "", 400},
		{`{"type":"everyone"}`, "", 400},
	} {
		code, desc := call(t, s, "setMyCommands", url.Values{"commands": {cmds}, "scope": {tt.scope}})
		if code != tt.want {
			t.Errorf("scope %s: status %d (%s), want %d", tt.scope, code, desc, tt.want)
		}
		if tt.key != "" && strings.Join(s.Commands(tt.key), ",") != "new" {
			t.Errorf("scope %s: commands %v", tt.key, s.Commands(tt.key))
		}
	}
	if code, _ := call(t, s, "setMyCommands", url.Values{"commands": {`[{"command":"dream-log","description":"x"}]`}}); code != 400 {
		t.Errorf("a command name with a hyphen: status %d, want 400", code)
	}
}
