package setup

import (
	"slices"
	"strings"

	"github.com/nanobot-go/nanobot/configs"
	"github.com/nanobot-go/nanobot/providers"
)

// Guide is a chat platform a setup walks through: the secrets it needs
// before it can connect, and the one its live check proves.
type Guide struct {
	// Name is the channel (channels.<name>).
	Name string
	// Secrets are the keys under channels.<name> that must be set.
	Secrets []string
	// Checked is the secret the platform's check takes.
	Checked string
}

// Guides are the channels the setup offers, in the order it offers them.
func Guides() []Guide {
	return []Guide{
		{Name: "telegram", Secrets: []string{"token"}, Checked: "token"},
		{Name: "slack", Secrets: []string{"botToken", "appToken"}, Checked: "botToken"},
		{Name: "discord", Secrets: []string{"token"}, Checked: "token"},
	}
}

// GuideFor returns the guide of channel name.
func GuideFor(name string) (Guide, bool) {
	i := slices.IndexFunc(Guides(), func(g Guide) bool { return g.Name == name })
	if i < 0 {
		return Guide{}, false
	}
	return Guides()[i], true
}

// webChat is the built-in channel every gateway runs; it needs no setup
// and does not count as a chat channel set up.
const webChat = "web"

// Report is what a config has set up and what it still lacks. It holds no
// secret's value.
type Report struct {
	Model    ModelState     `json:"model"`
	Channels []ChannelState `json:"channels"`
	// Missing names what is essential and not set up: "model" (no
	// provider is configured for the model) and "channel" (no chat channel
	// besides the web chat is enabled with its secrets).
	Missing []string `json:"missing"`
}

// ModelState is the default agent's model and the provider it goes to.
type ModelState struct {
	Model string `json:"model"`
	// Provider is agents.defaults.provider ("auto": matched from the
	// model and the keys).
	Provider string `json:"provider"`
	// Resolved is the provider the model goes to, with why ("" when no
	// configured provider takes it: Problem says why).
	Resolved string `json:"resolved"`
	Reason   string `json:"reason,omitempty"`
	// APIBase is where the requests go.
	APIBase string `json:"apiBase,omitempty"`
	// HasKey: the resolved provider has an API key. Keyless: it needs none
	// (a local server, a custom endpoint, a sign-in, AWS credentials).
	HasKey  bool   `json:"hasKey"`
	Keyless bool   `json:"keyless"`
	Ready   bool   `json:"ready"`
	Problem string `json:"problem,omitempty"`
}

// ChannelState is one chat channel's setup.
type ChannelState struct {
	Name    string `json:"name"`
	Enabled bool   `json:"enabled"`
	// Guided: the setup walks through this one (see Guides).
	Guided bool `json:"guided"`
	// Secrets are the guided channel's required secrets, each set or not.
	Secrets []SecretState `json:"secrets"`
	// Ready: enabled, with every required secret set. A channel the setup
	// does not guide is taken as configured in the file once enabled.
	Ready bool `json:"ready"`
}

// SecretState says whether a secret is set, never what it is.
type SecretState struct {
	Key string `json:"key"`
	Set bool   `json:"set"`
}

// ProviderSettings is what providers.Resolve needs of c's providers. It
// knows no sign-ins (cmd's own version adds them from the token store).
func ProviderSettings(c *configs.Config) map[string]providers.Settings {
	out := make(map[string]providers.Settings, len(c.Providers))
	for name, p := range c.Providers {
		out[name] = providers.Settings{APIKey: p.APIKey, APIBase: p.APIBase, APIVersion: p.APIVersion,
			ExtraHeaders: p.ExtraHeaders, API: p.WireAPI(), Region: p.Region, Profile: p.Profile}
	}
	return out
}

// Inspect reports what c has set up: the default agent's model resolved
// the way the agent resolves it (settings are c's providers as
// ProviderSettings or cmd makes them), and each chat channel in the
// config or offered by the setup.
func Inspect(c *configs.Config, settings map[string]providers.Settings) Report {
	r := Report{Missing: []string{}, Channels: []ChannelState{}}
	d := c.AgentList()[0].Settings
	r.Model = ModelState{Model: d.Model, Provider: or(d.Provider, "auto")}
	res, err := providers.Resolve(d.Model, d.Provider, settings)
	if err != nil {
		r.Model.Problem = strings.TrimPrefix(err.Error(), "resolve provider: ")
	} else {
		spec := res.Spec
		r.Model.Resolved, r.Model.Reason, r.Model.APIBase = res.Provider, res.Reason, res.APIBase
		r.Model.HasKey = res.APIKey != ""
		r.Model.Keyless = spec.KeyOptional || spec.IsLocal || spec.SignIn || spec.AWSCredentials || spec.EntraID
		r.Model.Ready = r.Model.HasKey || r.Model.Keyless
		if !r.Model.Ready {
			r.Model.Problem = "provider " + res.Provider + " has no API key"
		}
	}
	if !r.Model.Ready {
		r.Missing = append(r.Missing, "model")
	}

	names := c.Channels.Names()
	for _, g := range Guides() {
		if !slices.Contains(names, g.Name) {
			names = append(names, g.Name)
		}
	}
	slices.Sort(names)
	chat := false
	for _, name := range names {
		if name == webChat {
			continue
		}
		st := ChannelState{Name: name, Enabled: c.Channels.Common(name).Enabled, Secrets: []SecretState{}}
		st.Ready = st.Enabled
		if g, ok := GuideFor(name); ok {
			st.Guided = true
			raw := c.Channels.Platforms[name]
			for _, k := range g.Secrets {
				v, _ := raw[k].(string)
				set := strings.TrimSpace(v) != ""
				st.Secrets = append(st.Secrets, SecretState{Key: k, Set: set})
				st.Ready = st.Ready && set
			}
		}
		chat = chat || st.Ready
		r.Channels = append(r.Channels, st)
	}
	if !chat {
		r.Missing = append(r.Missing, "channel")
	}
	return r
}
