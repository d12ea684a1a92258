package main

import (
	"strings"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/channels/mattermost/mattermosttest"
	"github.com/nanobot-go/nanobot/internal/waitfor"
	"github.com/nanobot-go/nanobot/providers/providertest"
)

// TestMattermostEndToEnd: a DM goes through the whole gateway (websocket
// event -> adapter -> gate -> agent -> scripted model -> dispatcher) and the
// answer is posted and streamed by patching the post; a channel post that
// @mentions the bot is answered in a thread under it; a DM from a user not
// on allowFrom gets a pairing code and never reaches the model.
func TestMattermostEndToEnd(t *testing.T) {
	fake := mattermosttest.New(t)
	llm := providertest.New(t)
	llm.Handle(func(providertest.Request) providertest.Reply {
		return providertest.Reply{Text: scriptedAnswer, Chunks: 12, EventDelay: 150 * time.Millisecond}
	})
	ann := mattermosttest.User{ID: "annid00000000000000000001", Username: "ann"}
	eve := mattermosttest.User{ID: "eveid00000000000000000002", Username: "eve"}
	base := startTestGateway(t, map[string]any{"mattermost": map[string]any{
		"enabled": true, "url": fake.URL, "token": mattermosttest.Token, "allowFrom": []string{"ann"},
	}}, llm)

	fake.Post(mattermosttest.Msg{From: eve, ChannelID: "dm-eve", ChannelType: "D", Message: "let me in"})
	fake.Post(mattermosttest.Msg{From: ann, ChannelID: "dm-ann", ChannelType: "D", Message: "hello there"})
	defer func() {
		if t.Failed() {
			t.Logf("sent: %+v", fake.Sent())
		}
	}()
	shown := func(channel string) (texts []string, edits int) {
		latest := map[string]string{}
		var order []string
		for _, s := range fake.Sent() {
			if s.ChannelID != channel {
				continue
			}
			if s.Edit {
				edits++
			} else {
				order = append(order, s.PostID)
			}
			latest[s.PostID] = s.Message
		}
		for _, id := range order {
			texts = append(texts, latest[id])
		}
		return texts, edits
	}
	waitfor.Within(t, "the streamed answer to ann", 30*time.Second, func() bool {
		texts, _ := shown("dm-ann")
		return len(texts) == 1 && texts[0] == scriptedAnswer
	})
	if _, edits := shown("dm-ann"); edits == 0 {
		t.Error("the answer arrived without patches; want it streamed")
	}
	waitfor.Within(t, "a pairing code for eve", 10*time.Second, func() bool {
		texts, _ := shown("dm-eve")
		return len(texts) == 1 && strings.Contains(texts[0], "pairing code")
	})
	waitfor.Within(t, "eve denied", 10*time.Second, func() bool { return inboundCount(t, base, "mattermost", "denied") == 1 })

	top := fake.Post(mattermosttest.Msg{From: ann, ChannelID: "town-square", ChannelType: "O", Message: "@nanobot summarise please", Mentions: []string{mattermosttest.Bot.ID}})
	waitfor.Within(t, "the answer in a thread under ann's post", 30*time.Second, func() bool {
		for _, s := range fake.Sent() {
			if s.ChannelID == "town-square" && !s.Edit && s.RootID == top {
				return true
			}
		}
		return false
	})
	if n := len(llm.Requests()); n != 2 {
		t.Errorf("%d model requests, want 2 (ann's DM and mention): eve must not reach the model", n)
	}
	if v := fake.Violations(); len(v) > 0 {
		t.Errorf("protocol violations: %v", v)
	}
}
