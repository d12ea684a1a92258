package teams

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/channels"
	"github.com/nanobot-go/nanobot/channels/channeltest"
	"github.com/nanobot-go/nanobot/channels/teams/teamstest"
	"github.com/nanobot-go/nanobot/internal/waitfor"
)

const (
	alice   = "29:1alice"
	mallory = "29:1mallory"
	group   = "19:groupchat@thread.v2"
)

// setup starts the fake and the channel, with the channel's webhook
// handler served where the fake delivers activities.
func setup(t *testing.T, log *slog.Logger, edit func(*Config)) (*teamstest.Server, *Channel) {
	t.Helper()
	f := teamstest.New(t)
	c := DefaultConfig()
	c.Enabled, c.AllowFrom = true, []string{"*"}
	c.AppID, c.AppPassword = teamstest.AppID, teamstest.AppPassword
	c.OpenIDMetadataURL, c.LoginURL = f.MetadataURL(), f.LoginURL()
	if edit != nil {
		edit(&c)
	}
	ch, err := New(c, channels.Deps{Log: log})
	if err != nil {
		t.Fatal(err)
	}
	ch.backoffMin, ch.backoffMax = 20*time.Millisecond, 200*time.Millisecond
	ch.editInterval = 100 * time.Millisecond
	mux := http.NewServeMux()
	mux.Handle(ch.WebhookPath(), ch.WebhookHandler())
	gw := httptest.NewServer(mux)
	t.Cleanup(gw.Close)
	f.WebhookURL = gw.URL + ch.WebhookPath()
	t.Cleanup(func() {
		if v := f.Violations(); len(v) > 0 {
			t.Errorf("protocol violations: %q", v)
		}
	})
	return f, ch
}

func sent(f *teamstest.Server) []channeltest.Sent {
	var out []channeltest.Sent
	for _, s := range f.Sent() {
		if s.Type == "typing" {
			continue
		}
		out = append(out, channeltest.Sent{ChatID: s.Conversation, MessageID: s.ActivityID, Edit: s.Edit, Text: s.Text, At: s.At})
	}
	return out
}

func TestConformance(t *testing.T) {
	users := map[string]string{channeltest.Alice: alice, channeltest.Mallory: mallory}
	channeltest.Run(t, channeltest.Harness{
		Skip: map[string]string{channeltest.CheckDropConnection: "Teams delivers by webhook: there is no connection to drop"},
		Setup: func(t *testing.T, env channeltest.Env) channeltest.Fixture {
			f, ch := setup(t, env.Log, nil)
			return channeltest.Fixture{
				Channel:  ch,
				SenderID: func(user string) string { return users[user] + "|aad-" + user },
				Emit: func(m channeltest.Message) channeltest.Emitted {
					waitfor.Within(t, "teams ready", 10*time.Second, func() bool { return ch.Health().State == channels.StateConnected })
					msg := teamstest.Message{From: users[m.From], AAD: "aad-" + m.From, Text: m.Text}
					if m.Group {
						msg.Conversation, msg.Type, msg.MentionBot = group, teamstest.GroupChat, true
					}
					conv, id := f.Emit(msg)
					return channeltest.Emitted{ChatID: conv, MessageID: id}
				},
				EmitMalformed: func() { f.Post([]byte(`{"type":"message","id":42,"from":"nope"`), f.Token(teamstest.Claims{})) },
				Acked:         func(e channeltest.Emitted) bool { return f.Acked(e.MessageID) == http.StatusOK },
				Sent:          func() []channeltest.Sent { return sent(f) },
			}
		},
	})
}

// Tokens that are forged, expired, for another bot, from another issuer,
// signed with a symmetric key, not yet valid, or issued for another service
// URL are refused with 401 and their activities never reach the gateway; a
// flood of unknown kids does not make the channel fetch the keys again.
func TestTokensRejected(t *testing.T) {
	f, ch := setup(t, nil, nil)
	rec := &channeltest.Recorder{}
	channeltest.Start(t, ch, rec)
	fetches := f.KeyFetches()
	other := teamstest.NewKey(t)
	body, _, _ := f.Activity(teamstest.Message{From: alice, Text: "forged"})
	for name, tok := range map[string]string{
		"other key, genuine kid": f.Token(teamstest.Claims{Key: other}),
		"other key, unknown kid": f.Token(teamstest.Claims{Key: other, Kid: "attacker"}),
		"expired":                f.Token(teamstest.Claims{Expires: time.Now().Add(-time.Hour), NotBefore: time.Now().Add(-2 * time.Hour)}),
		"not yet valid":          f.Token(teamstest.Claims{NotBefore: time.Now().Add(time.Hour), Expires: time.Now().Add(2 * time.Hour)}),
		"wrong audience":         f.Token(teamstest.Claims{Audience: "another-bot-app-id"}),
		"wrong issuer":           f.Token(teamstest.Claims{Issuer: "https://sts.windows.net/evil/"}),
		"HS256":                  f.Token(teamstest.Claims{Alg: jwt.SigningMethodHS256}),
		"other service URL":      f.Token(teamstest.Claims{ServiceURL: "https://attacker.example/"}),
		"none":                   "",
		"garbage":                "not.a.jwt",
	} {
		if code := f.Post(body, tok); code != http.StatusUnauthorized {
			t.Errorf("%s: HTTP %d, want 401", name, code)
		}
	}
	// A genuine token for the fake's service URL on an activity that names
	// another one: replies would carry the bot's token there.
	moved := teamstest.WithServiceURL(body, "https://attacker.example/")
	if code := f.Post(moved, f.Token(teamstest.Claims{})); code != http.StatusUnauthorized {
		t.Errorf("serviceUrl differing from the claim: HTTP %d, want 401", code)
	}
	f.Emit(teamstest.Message{From: alice, Text: "genuine"})
	rec.Wait(t, "genuine")
	for _, m := range rec.All() {
		if m.Content == "forged" {
			t.Error("an activity with a bad token was delivered")
		}
	}
	if n := f.KeyFetches() - fetches; n != 0 {
		t.Errorf("%d key fetches for bad tokens, want 0 within a minute of the last", n)
	}
}

// When the service rotates its key, a token with the new kid makes the
// channel fetch the keys once and accept it.
func TestKeyRotation(t *testing.T) {
	f, ch := setup(t, nil, nil)
	ch.keys.minRefresh = 0
	rec := &channeltest.Recorder{}
	channeltest.Start(t, ch, rec)
	fetches := f.KeyFetches()
	f.RotateKey()
	f.Emit(teamstest.Message{From: alice, Text: "signed with the new key"})
	rec.Wait(t, "signed with the new key")
	if n := f.KeyFetches() - fetches; n != 1 {
		t.Errorf("%d key fetches after the rotation, want 1", n)
	}
}

// A single-tenant bot refuses activities from other tenants.
func TestTenant(t *testing.T) {
	f, ch := setup(t, nil, func(c *Config) { c.TenantID = teamstest.TenantID })
	rec := &channeltest.Recorder{}
	channeltest.Start(t, ch, rec)
	body, _, _ := f.Activity(teamstest.Message{From: alice, Text: "from elsewhere", Tenant: "ffffffff-0000-0000-0000-000000000000"})
	if code := f.Post(body, f.Token(teamstest.Claims{})); code != http.StatusForbidden {
		t.Errorf("other tenant: HTTP %d, want 403", code)
	}
	f.Emit(teamstest.Message{From: alice, Text: "from home"})
	rec.Wait(t, "from home")
	for _, m := range rec.All() {
		if m.Content == "from elsewhere" {
			t.Error("an activity from another tenant was delivered")
		}
	}
}

// In group chats and channels only messages that @mention the bot are
// taken, with the mention stripped; the answer in a channel goes to the
// thread of the message it answers. The token is fetched once and again
// after the Connector refused it.
func TestMentionsThreadsAndToken(t *testing.T) {
	f, ch := setup(t, nil, nil)
	rec := &channeltest.Recorder{}
	channeltest.Start(t, ch, rec)
	const channel = "19:general@thread.tacv2;messageid=1600000000001"
	f.Emit(teamstest.Message{From: alice, Conversation: channel, Type: teamstest.ChannelT, Text: "people talking"})
	f.Emit(teamstest.Message{From: alice, Conversation: channel, Type: teamstest.ChannelT, Text: "what is up?", MentionBot: true})
	got := rec.Wait(t, "what is up?")
	if got.Content != "what is up?" || !got.IsGroup || got.ChatID != channel {
		t.Errorf("got %+v, want the mention stripped, a group, chat %s", got, channel)
	}
	for _, m := range rec.All() {
		if strings.Contains(m.Content, "people talking") {
			t.Error("a channel message without a mention was delivered")
		}
	}
	out := bus.Outbound{ChatID: got.ChatID, Content: "all **good**", ReplyTo: got.MessageID, Metadata: got.Metadata}
	if _, err := ch.Send(t.Context(), out); err != nil {
		t.Fatal(err)
	}
	if err := ch.Typing(t.Context(), got.ChatID, got.Metadata); err != nil {
		t.Fatal(err)
	}
	f.ExpireTokens()
	ref, err := ch.Send(t.Context(), out)
	if err != nil {
		t.Fatalf("send after the token expired: %v", err)
	}
	if err := ch.Edit(t.Context(), ref, bus.Outbound{ChatID: got.ChatID, Content: "all good, edited"}); err != nil {
		t.Fatal(err)
	}
	if n := f.Issued(); n != 2 {
		t.Errorf("%d tokens issued, want 2 (one cached, one after the 401)", n)
	}
	s := f.Sent()
	if len(s) != 4 || s[0].ReplyToID != got.MessageID || s[0].Conversation != channel || s[0].Text != "all **good**" || s[1].Type != "typing" || !s[3].Edit {
		t.Errorf("sent %+v, want a reply in the thread, typing, a reply and an edit", s)
	}
}

// A password the login endpoint refuses stops the channel with a
// FatalError that does not show the password.
func TestWrongPassword(t *testing.T) {
	_, ch := setup(t, nil, func(c *Config) { c.AppPassword = "wrong-secret-0xdead" })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := ch.Run(ctx, &channeltest.Recorder{})
	if !channels.IsFatal(err) || !errors.Is(err, ErrUnauthorized) {
		t.Fatalf("Run = %v, want a FatalError wrapping ErrUnauthorized", err)
	}
	if strings.Contains(err.Error(), "0xdead") {
		t.Errorf("the error shows the password: %v", err)
	}
}

// Before Run the endpoint answers 503.
func TestNotRunning(t *testing.T) {
	f, _ := setup(t, nil, nil)
	body, _, _ := f.Activity(teamstest.Message{From: alice, Text: "early"})
	if code := f.Post(body, f.Token(teamstest.Claims{})); code != http.StatusServiceUnavailable {
		t.Errorf("HTTP %d before Run, want 503", code)
	}
}
