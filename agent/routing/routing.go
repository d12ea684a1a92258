// Package routing decides which agent answers an inbound message, in which
// conversation (session key) and with which per-chat overrides: the
// bindings (first match wins, the default agent otherwise), the identity
// links that let one person keep one conversation across platforms, and the
// agents' session scopes.
//
// A Router is built once from a validated config and is read-only
// afterwards: Route is pure and safe for concurrent use.
package routing

import (
	"maps"
	"slices"

	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/configs"
)

// Decision is where a message goes.
type Decision struct {
	// Agent names the agent (configs.DefaultAgent when no binding matched).
	Agent string
	// SessionKey is the conversation: the message's own key unless the
	// agent's scope is per-identity and the sender is linked.
	SessionKey string
	// ModelPreset is the matching binding's model ("" = the agent's).
	ModelPreset string
	// DenyTools are the tools the matching binding withholds.
	DenyTools []string
	// QueueMode is the matching binding's queue mode ("" = the agent's).
	QueueMode string
	// Binding is the index of the matching binding, -1 for none.
	Binding int
}

// Router routes messages by a config's bindings and identity links.
type Router struct {
	bindings   []configs.Binding
	identities []link            // in the config's order
	scopes     map[string]string // agent -> session scope
}

// New builds the router of c (which Load validated).
func New(c *configs.Config) *Router {
	r := &Router{bindings: c.Bindings, scopes: map[string]string{}}
	for _, ident := range slices.Sorted(maps.Keys(c.IdentityLinks)) {
		for _, a := range c.IdentityLinks[ident] {
			r.identities = append(r.identities, link{account: a, identity: ident})
		}
	}
	for _, a := range c.AgentList() {
		r.scopes[a.Name] = a.SessionScope
	}
	return r
}

// Route decides where m goes. A message that already names its agent (a
// sub-agent's result) stays with it; its session key is kept.
func (r *Router) Route(m bus.Inbound) Decision {
	d := Decision{Agent: configs.DefaultAgent, SessionKey: m.Key(), Binding: -1}
	if m.Agent != "" {
		d.Agent = m.Agent
		d.ModelPreset, d.DenyTools, d.QueueMode = m.ModelPreset, m.DenyTools, m.QueueMode
		return d
	}
	for i, b := range r.bindings {
		if matches(b.Match, m) {
			d.Agent, d.ModelPreset, d.QueueMode, d.Binding = b.Agent, b.ModelPreset, b.Queue, i
			if b.Tools != nil {
				d.DenyTools = b.Tools.Deny
			}
			break
		}
	}
	if m.FromPerson() && !m.IsGroup && m.SessionKey == "" {
		switch r.scopes[d.Agent] {
		case configs.ScopePerIdentity:
			if ident, ok := r.identity(m.Channel, m.SenderID); ok {
				d.SessionKey = "identity:" + ident
			}
		case configs.ScopeShared:
			d.SessionKey = "shared:" + d.Agent
		}
	}
	return d
}

// Apply sets d on m: the fields the agent reads.
func (d Decision) Apply(m *bus.Inbound) {
	m.Agent = d.Agent
	if d.SessionKey != m.Key() {
		m.SessionKey = d.SessionKey
	}
	m.ModelPreset = d.ModelPreset
	m.DenyTools = d.DenyTools
	m.QueueMode = d.QueueMode
}

// link is one account of identityLinks ("telegram:123456789") and the
// identity it belongs to.
type link struct{ account, identity string }

// identity finds the linked identity of a sender; a Telegram sender
// "123|alice" is linked as "telegram:123", "telegram:alice" or
// "telegram:@Alice" (bus.ChannelSenderMatches).
func (r *Router) identity(channel, sender string) (string, bool) {
	for _, l := range r.identities {
		if bus.ChannelSenderMatches(l.account, channel, sender) {
			return l.identity, true
		}
	}
	return "", false
}

func matches(mt configs.BindingMatch, m bus.Inbound) bool {
	switch {
	case mt.Channel != "" && mt.Channel != m.Channel:
		return false
	case mt.ChatID != "" && mt.ChatID != m.ChatID:
		return false
	case mt.SenderID != "" && !bus.SenderMatches(mt.SenderID, m.SenderID):
		return false
	case mt.ChatType == "dm" && m.IsGroup, mt.ChatType == "group" && !m.IsGroup:
		return false
	case mt.ThreadID != "" && mt.ThreadID != m.ThreadID:
		return false
	}
	return true
}
