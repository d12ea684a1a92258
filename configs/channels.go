package configs

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
)

// ChannelsConfig holds the settings shared by all channels plus one object
// per platform ("telegram", "slack", ...). A platform's object is decoded by
// its own package into its typed Config (see Platform); here only the keys
// every platform has are typed.
type ChannelsConfig struct {
	// SendProgress sends the agent's intermediate text while it works.
	SendProgress bool `json:"sendProgress"`
	// SendToolHints sends a short line per tool call (e.g. "🔧 exec: ls").
	SendToolHints bool `json:"sendToolHints"`
	// SendMaxRetries is how often a failed send is retried (1 s, 2 s, 4 s...).
	SendMaxRetries int `json:"sendMaxRetries"`
	// OutboxMaxAgeH is how many hours a reply is retried while its
	// platform is down or reconnecting before it is given up (default 24).
	OutboxMaxAgeH int `json:"outboxMaxAgeH"`
	// Platforms maps a platform name to its raw config object.
	Platforms map[string]map[string]any `json:"-"`
}

// ChannelCommon are the keys every platform config has.
type ChannelCommon struct {
	// Enabled starts the channel with the gateway.
	Enabled bool `json:"enabled"`
	// AllowFrom lists the sender ids allowed to talk to the bot: empty
	// means nobody (pairing still works in direct chats), "*" everyone.
	AllowFrom []string `json:"allowFrom"`
	// Admins lists the sender ids (or usernames) who may run
	// state-changing chat commands such as "/pairing approve". An admin
	// must also be allowed. Empty: senders named explicitly in allowFrom
	// (not via "*") are admins.
	Admins []string `json:"admins,omitempty"`
	// SendProgress and SendToolHints override channels.sendProgress and
	// channels.sendToolHints for this platform (unset: the shared value).
	SendProgress  *bool `json:"sendProgress,omitempty"`
	SendToolHints *bool `json:"sendToolHints,omitempty"`
	// ToolHintPrefix replaces the "🔧 " before this platform's tool hints
	// (a trailing space is added to a prefix that ends in neither space
	// nor newline).
	ToolHintPrefix *string `json:"toolHintPrefix,omitempty"`
}

var channelsSharedKeys = []string{"sendProgress", "sendToolHints", "sendMaxRetries", "outboxMaxAgeH"}

// MarshalJSON writes the shared keys and the platform objects side by side.
func (c ChannelsConfig) MarshalJSON() ([]byte, error) {
	m := make(map[string]any, len(c.Platforms)+3)
	for name, p := range c.Platforms {
		m[name] = p
	}
	m["sendProgress"] = c.SendProgress
	m["sendToolHints"] = c.SendToolHints
	m["sendMaxRetries"] = c.SendMaxRetries
	m["outboxMaxAgeH"] = c.OutboxMaxAgeH
	return json.Marshal(m)
}

// UnmarshalJSON reads the shared keys; every other object key is a platform.
// Keys absent from the input keep their current value, so decoding over
// defaults works.
func (c *ChannelsConfig) UnmarshalJSON(b []byte) error {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	for _, k := range channelsSharedKeys {
		v, ok := raw[k]
		if !ok {
			continue
		}
		delete(raw, k)
		var err error
		switch k {
		case "sendProgress":
			err = json.Unmarshal(v, &c.SendProgress)
		case "sendToolHints":
			err = json.Unmarshal(v, &c.SendToolHints)
		case "sendMaxRetries":
			err = json.Unmarshal(v, &c.SendMaxRetries)
		case "outboxMaxAgeH":
			err = json.Unmarshal(v, &c.OutboxMaxAgeH)
		}
		if err != nil {
			return fmt.Errorf("channels.%s: %w", k, err)
		}
	}
	if c.Platforms == nil {
		c.Platforms = map[string]map[string]any{}
	}
	for name, v := range raw {
		var p map[string]any
		if err := json.Unmarshal(v, &p); err != nil {
			return fmt.Errorf("channels.%s: want object: %w", name, err)
		}
		c.Platforms[name] = p
	}
	return nil
}

// Names returns the configured platform names, sorted.
func (c ChannelsConfig) Names() []string {
	return slices.Sorted(maps.Keys(c.Platforms))
}

// Common returns the shared keys of one platform's config.
func (c ChannelsConfig) Common(name string) ChannelCommon {
	var cc ChannelCommon
	_ = c.Decode(name, &cc) // types were checked at load
	return cc
}

// Enabled returns the names of enabled platforms, sorted.
func (c ChannelsConfig) Enabled() []string {
	var out []string
	for _, n := range c.Names() {
		if c.Common(n).Enabled {
			out = append(out, n)
		}
	}
	return out
}

// Decode decodes platform name's config object over into (a pointer to the
// platform's typed Config, pre-filled with its defaults). Absent keys keep
// their defaults. A missing platform leaves into unchanged.
func (c ChannelsConfig) Decode(name string, into any) error {
	p, ok := c.Platforms[name]
	if !ok {
		return nil
	}
	b, err := json.Marshal(p)
	if err != nil {
		return fmt.Errorf("channels.%s: %w", name, err)
	}
	if err := json.Unmarshal(b, into); err != nil {
		return fmt.Errorf("channels.%s: %w", name, err)
	}
	return nil
}
