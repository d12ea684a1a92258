package channels

import (
	"fmt"
	"log/slog"
	"sort"

	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/configs"
	"github.com/nanobot-go/nanobot/internal/redact"
)

// Deps are what a channel factory may use.
type Deps struct {
	Log *slog.Logger
	// Paths are the instance folders (media, state).
	Paths configs.Paths
	// Loopback is true when the gateway's HTTP server listens on loopback
	// only.
	Loopback bool
	// Redact is the process's redactor (the log handler, tool results and
	// replies use it too); nil in tests that do not care. Adapters get theirs
	// through Redactor, so tokens they fetch at run time are redacted
	// everywhere.
	Redact *redact.Redactor
	// Commands are the chat commands the gateway answers, for platforms
	// with a command menu of their own (Discord's application commands,
	// Slack's App Home). A command picked from a menu is delivered as its
	// text ("/model gpt"); the agent and the gate obey or refuse it as if
	// it had been typed. Empty when the caller has none (`nanobot channels
	// login`): an adapter then leaves the platform's menu as it is.
	Commands []bus.Command
}

// Redactor returns the redactor an adapter uses for its errors and logs:
// Redact with secrets added, or a new one over secrets when Redact is nil.
func (d Deps) Redactor(secrets ...string) *redact.Redactor {
	if d.Redact == nil {
		return redact.New(secrets...)
	}
	d.Redact.Add(secrets...)
	return d.Redact
}

// Factory builds a channel from its raw config (decode it with
// configs.ChannelsConfig.Decode over the platform's defaults).
type Factory struct {
	// New builds the channel.
	New func(cfg configs.ChannelsConfig, deps Deps) (Channel, error)
	// ConfigType is a zero value of the platform's typed config, used to
	// type-check config.json at load.
	ConfigType any
	// OnByDefault builds the channel when config.json does not mention it
	// (the web chat); "enabled": false still turns it off.
	OnByDefault bool
}

// NewFactory is the Factory of a platform whose typed config C is decoded
// from channels.<name> over def() and handed to build (the adapter's New).
func NewFactory[C any, T Channel](name string, def func() C, build func(C, Deps) (T, error)) Factory {
	return Factory{
		New: func(cfg configs.ChannelsConfig, deps Deps) (Channel, error) {
			c := def()
			if err := cfg.Decode(name, &c); err != nil {
				return nil, err
			}
			ch, err := build(c, deps)
			if err != nil {
				return nil, err
			}
			return ch, nil
		},
		ConfigType: def(),
	}
}

// Registry maps platform names to factories. cmd fills it; nothing else in
// the tree knows the list of platforms.
type Registry struct {
	factories map[string]Factory
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry { return &Registry{factories: map[string]Factory{}} }

// Register adds a platform. Registering a name twice is a programming
// error reported at start.
func (r *Registry) Register(name string, f Factory) error {
	if _, dup := r.factories[name]; dup {
		return fmt.Errorf("channel %q registered twice", name)
	}
	r.factories[name] = f
	return nil
}

// Names lists the registered platforms, sorted.
func (r *Registry) Names() []string {
	names := make([]string, 0, len(r.factories))
	for n := range r.factories {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// ConfigTypes maps each platform to its config type (configs.Options.Platforms).
func (r *Registry) ConfigTypes() map[string]any {
	out := map[string]any{}
	for n, f := range r.factories {
		if f.ConfigType != nil {
			out[n] = f.ConfigType
		}
	}
	return out
}

// BuildOne creates the named channel from its config whether or not it is
// enabled (for `nanobot channels login`).
func (r *Registry) BuildOne(name string, cfg configs.ChannelsConfig, deps Deps) (Channel, error) {
	f, ok := r.factories[name]
	if !ok {
		return nil, fmt.Errorf("channels.%s: unknown channel (known: %v)", name, r.Names())
	}
	ch, err := f.New(cfg, deps)
	if err != nil {
		return nil, fmt.Errorf("channels.%s: %w", name, err)
	}
	return ch, nil
}

// Enabled lists the channels Build creates: those on by default that
// config.json does not mention (the web chat), then the enabled ones.
func (r *Registry) Enabled(cfg configs.ChannelsConfig) []string {
	names := cfg.Enabled()
	for _, name := range r.Names() {
		if _, mentioned := cfg.Platforms[name]; r.factories[name].OnByDefault && !mentioned {
			names = append([]string{name}, names...)
		}
	}
	return names
}

// Build creates every enabled channel. An enabled channel with no factory
// is an error naming the config path.
func (r *Registry) Build(cfg configs.ChannelsConfig, deps Deps) ([]Channel, error) {
	var out []Channel
	for _, name := range r.Enabled(cfg) {
		f, ok := r.factories[name]
		if !ok {
			return nil, fmt.Errorf("channels.%s: unknown channel (known: %v)", name, r.Names())
		}
		d := deps
		if d.Log != nil {
			d.Log = d.Log.With("channel", name)
		}
		ch, err := f.New(cfg, d)
		if err != nil {
			return nil, fmt.Errorf("channels.%s: %w", name, err)
		}
		out = append(out, ch)
	}
	return out, nil
}
