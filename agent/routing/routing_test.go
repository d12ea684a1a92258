package routing

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/configs"
)

func testConfig() *configs.Config {
	c := configs.Default()
	c.ModelPresets = map[string]configs.ModelPreset{"cheap": {Model: "m-cheap"}}
	c.Agents.List = []configs.AgentProfile{
		{Name: "work"}, {Name: "family", SessionScope: configs.ScopePerIdentity}, {Name: "public"}, {Name: "topics"},
	}
	c.Bindings = []configs.Binding{
		{Agent: "topics", Match: configs.BindingMatch{Channel: "telegram", ChatID: "-100", ThreadID: "7"}},
		{Agent: "public", Match: configs.BindingMatch{Channel: "telegram", ChatType: "group"}, ModelPreset: "cheap", Tools: &configs.ToolPolicy{Deny: []string{"exec"}}, Queue: configs.QueueFIFO},
		{Agent: "work", Match: configs.BindingMatch{Channel: "slack"}},
		{Agent: "family", Match: configs.BindingMatch{Channel: "telegram", SenderID: "alice"}},
		{Agent: "family", Match: configs.BindingMatch{ChatType: "dm", SenderID: "U9"}},
	}
	c.IdentityLinks = map[string][]string{"alice": {"telegram:123", "slack:U9"}}
	return &c
}

func TestRoute(t *testing.T) {
	r := New(testConfig())
	tests := []struct {
		name string
		m    bus.Inbound
		want Decision
	}{
		{"no binding matches: default agent, own key",
			bus.Inbound{Channel: "discord", ChatID: "c1", SenderID: "u"},
			Decision{Agent: "default", SessionKey: "discord:c1", Binding: -1}},
		{"group on telegram: public with the binding's preset and deny list",
			bus.Inbound{Channel: "telegram", ChatID: "-200", SenderID: "5|bob", IsGroup: true},
			Decision{Agent: "public", SessionKey: "telegram:-200", ModelPreset: "cheap", DenyTools: []string{"exec"}, QueueMode: configs.QueueFIFO, Binding: 1}},
		{"first match wins: the thread rule is before the group rule",
			bus.Inbound{Channel: "telegram", ChatID: "-100", IsGroup: true, ThreadID: "7", SessionKey: "telegram:-100:topic:7"},
			Decision{Agent: "topics", SessionKey: "telegram:-100:topic:7", Binding: 0}},
		{"another topic of that chat falls through to the group rule",
			bus.Inbound{Channel: "telegram", ChatID: "-100", IsGroup: true, ThreadID: "8"},
			Decision{Agent: "public", SessionKey: "telegram:-100", ModelPreset: "cheap", DenyTools: []string{"exec"}, QueueMode: configs.QueueFIFO, Binding: 1}},
		{"chatType dm does not match a group",
			bus.Inbound{Channel: "discord", ChatID: "g", SenderID: "U9", IsGroup: true},
			Decision{Agent: "default", SessionKey: "discord:g", Binding: -1}},
		{"slack goes to work whatever the chat",
			bus.Inbound{Channel: "slack", ChatID: "D1", SenderID: "U1"},
			Decision{Agent: "work", SessionKey: "slack:D1", Binding: 2}},
		{"telegram username matches senderId; per-identity links the DM",
			bus.Inbound{Channel: "telegram", ChatID: "123", SenderID: "123|alice"},
			Decision{Agent: "family", SessionKey: "identity:alice", Binding: 3}},
		{"the same person on another platform shares the session",
			bus.Inbound{Channel: "discord", ChatID: "dm9", SenderID: "U9"},
			Decision{Agent: "family", SessionKey: "discord:dm9", Binding: 4}},
		{"a message that names its agent stays with it",
			bus.Inbound{Channel: "slack", ChatID: "D1", SenderID: "subagent", Agent: "family", SessionKey: "identity:alice", Source: bus.SourceSubagent},
			Decision{Agent: "family", SessionKey: "identity:alice", Binding: -1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := r.Route(tt.m)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Route (-want +got):\n%s", diff)
			}
		})
	}
}

func TestIdentityLinks(t *testing.T) {
	c := testConfig()
	c.Agents.Defaults.SessionScope = configs.ScopePerIdentity
	c.Bindings = nil
	r := New(c)
	tg := r.Route(bus.Inbound{Channel: "telegram", ChatID: "123", SenderID: "123|alice"})
	sl := r.Route(bus.Inbound{Channel: "slack", ChatID: "D77", SenderID: "U9"})
	if tg.SessionKey != "identity:alice" || sl.SessionKey != tg.SessionKey {
		t.Errorf("telegram DM key %q, slack DM key %q: want both identity:alice", tg.SessionKey, sl.SessionKey)
	}
	for _, m := range []bus.Inbound{
		{Channel: "telegram", ChatID: "-5", SenderID: "123|alice", IsGroup: true},           // a group keeps its own
		{Channel: "telegram", ChatID: "999", SenderID: "999|mallory"},                       // not linked
		{Channel: "slack", ChatID: "D77", SenderID: "U9", SessionKey: "slack:D77:thread:1"}, // the adapter chose a thread
		{Channel: "telegram", ChatID: "123", SenderID: "cron", Source: bus.SourceCron},      // not a person
		{Channel: "slack", ChatID: "D77", SenderID: "telegram:123"},                         // no cross-platform spoofing
	} {
		if got := r.Route(m); got.SessionKey != m.Key() {
			t.Errorf("%+v: key %q, want its own %q", m, got.SessionKey, m.Key())
		}
	}
	// per-chat (the default) never links.
	c.Agents.Defaults.SessionScope = configs.ScopePerChat
	if got := New(c).Route(bus.Inbound{Channel: "slack", ChatID: "D77", SenderID: "U9"}); got.SessionKey != "slack:D77" {
		t.Errorf("per-chat key %q, want slack:D77", got.SessionKey)
	}
}

func TestApply(t *testing.T) {
	m := bus.Inbound{Channel: "slack", ChatID: "D1"}
	Decision{Agent: "work", SessionKey: "identity:a", ModelPreset: "cheap", DenyTools: []string{"exec"}}.Apply(&m)
	if m.Agent != "work" || m.Key() != "identity:a" || m.ModelPreset != "cheap" || len(m.DenyTools) != 1 {
		t.Errorf("applied: %+v", m)
	}
	n := bus.Inbound{Channel: "slack", ChatID: "D1"}
	Decision{Agent: "default", SessionKey: "slack:D1"}.Apply(&n)
	if n.SessionKey != "" {
		t.Errorf("own key written as an override: %q", n.SessionKey)
	}
}

// TestSendersWrittenAsEverywhere: a binding's senderId and an identity
// link write a sender as allowFrom does (bus.SenderMatches): any one of
// its ids, "@" and case ignored for a username.
func TestSendersWrittenAsEverywhere(t *testing.T) {
	c := configs.Default()
	c.Agents.List = []configs.AgentProfile{{Name: "family", SessionScope: configs.ScopePerIdentity}}
	m := bus.Inbound{Channel: "telegram", ChatID: "42", SenderID: "123456789|alice"}
	for _, entry := range []string{"123456789", "alice", "@Alice", "123456789|alice"} {
		c.Bindings = []configs.Binding{{Agent: "family", Match: configs.BindingMatch{Channel: "telegram", SenderID: entry}}}
		if d := New(&c).Route(m); d.Agent != "family" {
			t.Errorf("binding senderId %q: routed to %q, want family", entry, d.Agent)
		}
		c.Bindings = []configs.Binding{{Agent: "family", Match: configs.BindingMatch{Channel: "telegram"}}}
		c.IdentityLinks = map[string][]string{"alice-person": {"telegram:" + entry}}
		if d := New(&c).Route(m); d.SessionKey != "identity:alice-person" {
			t.Errorf("identity link telegram:%s: session %q, want the linked identity's", entry, d.SessionKey)
		}
	}
	c.Bindings = []configs.Binding{{Agent: "family", Match: configs.BindingMatch{Channel: "telegram", SenderID: "alic"}}}
	if d := New(&c).Route(m); d.Agent == "family" {
		t.Error("a part of a username matched")
	}
}

// TestSharedScope: every direct message, on any platform, is one
// conversation of the agent; groups, threads and non-persons keep theirs.
func TestSharedScope(t *testing.T) {
	c := testConfig()
	c.Agents.Defaults.SessionScope = configs.ScopeShared
	c.Bindings = nil
	r := New(c)
	for _, m := range []bus.Inbound{
		{Channel: "telegram", ChatID: "123", SenderID: "123|alice"},
		{Channel: "slack", ChatID: "D77", SenderID: "U9"},
		{Channel: "web", ChatID: "w1", SenderID: "owner"},
	} {
		if got := r.Route(m); got.SessionKey != "shared:"+configs.DefaultAgent {
			t.Errorf("%s DM: key %q, want shared:%s", m.Channel, got.SessionKey, configs.DefaultAgent)
		}
	}
	for _, m := range []bus.Inbound{
		{Channel: "telegram", ChatID: "-5", SenderID: "123|alice", IsGroup: true},
		{Channel: "slack", ChatID: "D77", SenderID: "U9", SessionKey: "slack:D77:thread:1"},
		{Channel: "telegram", ChatID: "123", SenderID: "cron", Source: bus.SourceCron},
	} {
		if got := r.Route(m); got.SessionKey != m.Key() {
			t.Errorf("%+v: key %q, want its own %q", m, got.SessionKey, m.Key())
		}
	}
}
