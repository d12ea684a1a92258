package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/nanobot-go/nanobot/agent/templates"
	"github.com/nanobot-go/nanobot/channels/slack"
	"github.com/nanobot-go/nanobot/channels/telegram"
	"github.com/nanobot-go/nanobot/configs"
	"github.com/nanobot-go/nanobot/gateway/setup"
	"github.com/nanobot-go/nanobot/gateway/webui"
	"github.com/nanobot-go/nanobot/providers"
)

// wizard is `nanobot onboard --wizard`: it asks for a provider and its key
// (checked with a live models call), the chat channels (each token checked
// against its platform), and a workbench password, then writes the config
// with mode 0600. It edits the file's own JSON, so ${VAR} references and
// keys it does not ask about stay as written. With refresh it walks an
// existing config, showing what is set (never a secret's value) and
// keeping it on Enter.
type wizard struct {
	ctx   context.Context
	p     *prompter
	out   io.Writer
	check *setup.Checker
	tree  map[string]any
	file  []byte // the file with the answers patched in, the rest as written
	err   error  // the first set that failed
}

// errChangedMeanwhile: the config file changed while the wizard asked
// (or a login waited for its scan).
var errChangedMeanwhile = errors.New("it changed while this command ran (the gateway or the workbench saved it); run the command again")

// wizardProviders are offered by name first; any known name is taken.
var wizardProviders = []string{"anthropic", "openai", "openrouter", "deepseek", "gemini", "groq", "ollama", "vllm", "custom"}

func runWizard(ctx context.Context, a *app, in io.Reader, out io.Writer, refresh bool) error {
	l := a.loaded
	if l.Exists && !refresh {
		fmt.Fprintf(out, "%s exists. `nanobot onboard --wizard --refresh` walks it and fills in what is missing.\n", l.Path)
		return nil
	}
	raw := configs.Example
	if l.Exists {
		b, err := os.ReadFile(l.Path)
		if err != nil {
			return err
		}
		raw = b
	}
	w := &wizard{ctx: ctx, p: newPrompter(in, out), out: out, check: setup.New(), tree: map[string]any{}, file: raw}
	if err := json.Unmarshal(raw, &w.tree); err != nil {
		return fmt.Errorf("%s is not plain JSON, so the wizard will not edit it: %w", l.Path, err)
	}
	fmt.Fprintf(out, "Setting up nanobot in %s. Enter keeps what is shown in [brackets]; a key may be given as $VAR to keep it in the environment.\n\n", filepath.Dir(l.Path))
	w.provider()
	w.channels()
	w.password()
	if w.err != nil {
		return fmt.Errorf("the wizard cannot edit %s: %w", l.Path, w.err)
	}
	if err := saveConfigData(l.Path, l.Exists, raw, w.file); err != nil {
		return err
	}
	fmt.Fprintf(out, "\nSaved %s (mode 0600).\n", l.Path)
	reloaded, err := configs.Load(configs.Options{Path: l.Path, Overrides: a.overrides, Platforms: platformTypes()})
	if err != nil {
		return err
	}
	if err := reloaded.Paths.Ensure(); err != nil {
		return err
	}
	if _, err := templates.Sync(reloaded.Paths.Workspace); err != nil {
		return err
	}
	fmt.Fprintf(out, "Workspace %s is ready. Next: `nanobot gateway` (or `nanobot gateway --background`), then `nanobot status`.\n", reloaded.Paths.Workspace)
	return nil
}

// provider asks for the model provider, its key (checked) and the model.
func (w *wizard) provider() {
	fmt.Fprintln(w.out, "— Model provider")
	current, _ := w.get("agents.defaults.provider").(string)
	if current == "" || current == "auto" {
		current = "anthropic"
	}
	var spec providers.ProviderSpec
	for {
		name := w.p.ask("Provider ("+strings.Join(wizardProviders, ", ")+"; any name from docs/providers.md)", current)
		s, ok := providers.Lookup(name)
		if ok {
			spec = s
			break
		}
		fmt.Fprintf(w.out, "  unknown provider %q\n", name)
		if w.p.eof {
			return
		}
	}
	at := "providers." + spec.Name + "."
	base, _ := w.get(at + "apiBase").(string)
	if base == "" {
		base = spec.DefaultAPIBase
	}
	if spec.IsLocal || spec.IsDirect || base == "" {
		base = w.p.ask("API base URL", base)
		w.set(at+"apiBase", base)
	}
	for try := 0; ; try++ {
		key, val := w.secretSetting(at+"apiKey", "API key", spec.EnvKey)
		if key == "" && !spec.KeyOptional {
			fmt.Fprintln(w.out, "  no key: the agent will answer \"add a key\" until one is set")
			break
		}
		models, err := w.check.Provider(w.ctx, spec, base, val)
		switch {
		case errors.Is(err, setup.ErrNotChecked):
			fmt.Fprintf(w.out, "  (%s keys are not checked here; `nanobot doctor` tries the provider)\n", spec.DisplayName)
		case err == nil:
			fmt.Fprintf(w.out, "  ✓ %s answered: %d models\n", spec.DisplayName, len(models))
		default:
			fmt.Fprintf(w.out, "  ✗ %s: %v\n", spec.DisplayName, err)
			if try < 2 && !w.p.eof && w.p.yes("  Enter the key again?", true) {
				continue
			}
		}
		w.set(at+"apiKey", key)
		break
	}
	w.set("agents.defaults.provider", spec.Name)
	model, _ := w.get("agents.defaults.model").(string)
	w.set("agents.defaults.model", w.p.ask("Model", model))
}

// secretSetting asks for the secret at path and returns what to store
// (the typed value, or a "${VAR}" reference) and the value itself for the
// check. An empty answer keeps what the file has.
func (w *wizard) secretSetting(path, label, envKey string) (store, value string) {
	cur, _ := w.get(path).(string)
	shown := ""
	switch {
	case strings.HasPrefix(cur, "${"):
		shown = cur
	case cur != "":
		shown = "set"
	}
	if envKey != "" && cur == "" && os.Getenv(envKey) != "" {
		fmt.Fprintf(w.out, "  (%s is set in the environment: type $%s to use it)\n", envKey, envKey)
	}
	got := w.p.secret("  "+label, shown, cur)
	if strings.HasPrefix(got, "$") && !strings.HasPrefix(got, "${") {
		got = "${" + strings.TrimPrefix(got, "$") + "}"
	}
	if v, ok := strings.CutPrefix(got, "${"); ok {
		return got, os.Getenv(strings.TrimSuffix(v, "}"))
	}
	return got, got
}

// channels asks, for each platform with a check, whether to set it up.
func (w *wizard) channels() {
	fmt.Fprintln(w.out, "\n— Chat channels (the web chat is always on; others: docs/configuration.md)")
	if w.p.yes("Set up Telegram?", w.get("channels.telegram.enabled") == true) {
		w.telegram()
	}
	if w.p.yes("Set up Slack?", w.get("channels.slack.enabled") == true) {
		w.slack()
	}
}

func (w *wizard) telegram() {
	base, _ := w.get("channels.telegram.apiBase").(string)
	if base == "" {
		base = telegram.DefaultAPIBase
	}
	for try := 0; ; try++ {
		store, token := w.secretSetting("channels.telegram.token", "Bot token (from @BotFather)", "")
		bot, err := w.check.Telegram(w.ctx, base, token)
		if err == nil {
			fmt.Fprintf(w.out, "  ✓ Telegram knows this bot: @%s\n", bot)
		} else {
			fmt.Fprintf(w.out, "  ✗ Telegram: %v\n", err)
			if try < 2 && !w.p.eof && w.p.yes("  Enter the token again?", true) {
				continue
			}
		}
		if token == "" {
			fmt.Fprintln(w.out, "  Telegram left as it was: it needs a token (run the wizard again with --refresh when you have one)")
			return
		}
		w.set("channels.telegram.token", store)
		break
	}
	w.set("channels.telegram.enabled", true)
	w.allowFrom("channels.telegram.allowFrom", "Who may talk to it: your Telegram user id or username (comma-separated; empty: nobody yet, strangers get a pairing code)")
}

func (w *wizard) slack() {
	base, _ := w.get("channels.slack.apiBase").(string)
	if base == "" {
		base = slack.DefaultAPIBase
	}
	for try := 0; ; try++ {
		store, token := w.secretSetting("channels.slack.botToken", "Bot token (xoxb-…)", "")
		team, err := w.check.Slack(w.ctx, base, token)
		if err == nil {
			fmt.Fprintf(w.out, "  ✓ Slack accepted the token: workspace %s\n", team)
		} else {
			fmt.Fprintf(w.out, "  ✗ Slack: %v\n", err)
			if try < 2 && !w.p.eof && w.p.yes("  Enter the token again?", true) {
				continue
			}
		}
		if token == "" {
			fmt.Fprintln(w.out, "  Slack left as it was: it needs a bot token (run the wizard again with --refresh when you have one)")
			return
		}
		w.set("channels.slack.botToken", store)
		break
	}
	app, appValue := w.secretSetting("channels.slack.appToken", "App-level token for Socket Mode (xapp-…)", "")
	if appValue == "" {
		fmt.Fprintln(w.out, "  Slack left off: Socket Mode needs the app-level token (run the wizard again with --refresh when you have one)")
		return
	}
	w.set("channels.slack.appToken", app)
	w.set("channels.slack.enabled", true)
	w.allowFrom("channels.slack.allowFrom", "Who may talk to it: Slack member ids (U…, comma-separated)")
}

func (w *wizard) allowFrom(path, label string) {
	var cur []string
	if list, ok := w.get(path).([]any); ok {
		for _, v := range list {
			if s, ok := v.(string); ok {
				cur = append(cur, s)
			}
		}
	}
	ans := w.p.ask("  "+label, strings.Join(cur, ", "))
	out := []any{}
	for _, s := range strings.Split(ans, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	w.set(path, out)
}

// password sets the workbench password (bcrypt; never stored in clear).
func (w *wizard) password() {
	fmt.Fprintln(w.out, "\n— Workbench (the web pages at the gateway's address)")
	q := "Set a workbench password? (needed beyond this machine; here a one-time link signs you in)"
	if has, _ := w.get("gateway.webui.password").(string); has != "" {
		q = "Change the workbench password? (one is set)"
	}
	if !w.p.yes(q, false) {
		return
	}
	for range 3 {
		pw := w.p.secret(fmt.Sprintf("  Password (at least %d characters)", webui.MinPasswordLen), "", "")
		if pw == "" && w.p.eof {
			return
		}
		if again := w.p.secret("  Again", "", ""); again != pw {
			fmt.Fprintln(w.out, "  they differ")
			continue
		}
		h, err := webui.HashPassword(pw)
		if err != nil {
			fmt.Fprintf(w.out, "  %v\n", err)
			return
		}
		w.set("gateway.webui.password", h)
		fmt.Fprintln(w.out, "  ✓ password set (stored as a bcrypt hash)")
		return
	}
}

// set writes path in the file's tree and in its bytes (only that value's
// bytes change); the first failure (a part of the path that holds no
// object) is kept and stops the save.
func (w *wizard) set(path string, v any) {
	err := configs.SetPath(w.tree, path, v)
	if err == nil {
		var file []byte
		if file, err = configs.PatchJSON(w.file, path, v); err == nil {
			w.file = file
		}
	}
	if err != nil && w.err == nil {
		w.err = err
	}
}

func (w *wizard) get(path string) any { return configs.GetPath(w.tree, path) }
