package main

import (
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/nanobot-go/nanobot/channels/email"
	"github.com/nanobot-go/nanobot/channels/matrix"
	"github.com/nanobot-go/nanobot/channels/telegram"
	"github.com/nanobot-go/nanobot/configs"
	"github.com/nanobot-go/nanobot/providers"
)

// genericWarning is how a key nobody documented is reported; a documented
// Python nanobot option must never get it.
var genericWarning = regexp.MustCompile(`unknown key|unknown channel|no config key`)

var envRef = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}`)

// TestNanobotConfigCorpus loads every config of configs/testdata/nanobot
// (one per option the Python nanobot documents, written by us) the way
// `nanobot status --config` does, with the variables it references set,
// and wants no error and no generic unknown-key warning.
func TestNanobotConfigCorpus(t *testing.T) {
	files, err := filepath.Glob("../../configs/testdata/nanobot/*.json")
	if err != nil || len(files) < 50 {
		t.Fatalf("corpus: %d files, %v", len(files), err)
	}
	t.Setenv("HOME", t.TempDir())
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".json"), func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range envRef.FindAllStringSubmatch(string(data), -1) {
				t.Setenv(m[1], "test-"+strings.ToLower(m[1]))
			}
			l, err := configs.Load(configs.Options{Path: f, Platforms: platformTypes()})
			if err != nil {
				t.Fatalf("load: %v", err)
			}
			for _, w := range l.Warnings {
				if genericWarning.MatchString(w) {
					t.Errorf("generic warning for a documented option: %s", w)
				}
			}
			// A provider named as nanobot names it is a provider here too:
			// never "unknown provider"; the provider examples resolve.
			d := l.Config.Agents.Defaults
			if _, err := providers.Resolve(d.Model, d.Provider, providerSettings(&l.Config, nil)); err != nil {
				if strings.Contains(err.Error(), "unknown provider") || strings.HasPrefix(filepath.Base(f), "provider-") && !strings.Contains(err.Error(), "not configured") {
					t.Errorf("the model's provider: %v", err)
				}
			}
			_, stderr, err := run(t, "status", "--config", f)
			if err != nil {
				t.Fatalf("nanobot status: %v\n%s", err, stderr)
			}
			if genericWarning.MatchString(stderr) {
				t.Errorf("nanobot status warned generically:\n%s", stderr)
			}
		})
	}
}

// TestNanobotOptionsMeanWhatTheySay checks the corpus options that are
// translated rather than ignored.
func TestNanobotOptionsMeanWhatTheySay(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	load := func(t *testing.T, name string) *configs.Loaded {
		t.Helper()
		f := "../../configs/testdata/nanobot/" + name + ".json"
		data, _ := os.ReadFile(f)
		for _, m := range envRef.FindAllStringSubmatch(string(data), -1) {
			t.Setenv(m[1], "test-"+strings.ToLower(m[1]))
		}
		l, err := configs.Load(configs.Options{Path: f, Platforms: platformTypes()})
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	hasWarning := func(l *configs.Loaded, prefix string) bool {
		for _, w := range l.Warnings {
			if strings.HasPrefix(w, prefix) {
				return true
			}
		}
		return false
	}

	t.Run("telegram webhook", func(t *testing.T) {
		l := load(t, "telegram-webhook")
		tg := telegram.DefaultConfig()
		if err := l.Config.Channels.Decode("telegram", &tg); err != nil {
			t.Fatal(err)
		}
		if tg.WebhookURL != "https://bot.example.org/tg" || tg.WebhookSecret != "abc_DEF-123" || tg.WebhookMaxConnections != 10 {
			t.Errorf("webhook config = %q %q %d", tg.WebhookURL, tg.WebhookSecret, tg.WebhookMaxConnections)
		}
		if err := tg.Validate(); err != nil {
			t.Errorf("translated telegram config does not validate: %v", err)
		}
		if !hasWarning(l, "channels.telegram.webhookListenPort: the webhook is served by the gateway") {
			t.Errorf("no specific warning for webhookListenPort: %q", l.Warnings)
		}
	})
	t.Run("email move", func(t *testing.T) {
		l := load(t, "email-move")
		em := email.DefaultConfig()
		if err := l.Config.Channels.Decode("email", &em); err != nil {
			t.Fatal(err)
		}
		if em.MoveTo != "Done" {
			t.Errorf("moveTo = %q, want postActionMoveMailbox's Done", em.MoveTo)
		}
	})
	t.Run("email delete is not a move", func(t *testing.T) {
		l := load(t, "email-delete")
		em := email.DefaultConfig()
		l.Config.Channels.Decode("email", &em)
		if em.MoveTo != "" || !hasWarning(l, "channels.email.postAction: processed mail is never deleted") {
			t.Errorf("moveTo %q, warnings %q", em.MoveTo, l.Warnings)
		}
	})
	t.Run("transcription", func(t *testing.T) {
		l := load(t, "transcription-groq")
		s, ok, why := l.Config.TranscriptionService()
		want := configs.TranscriptionService{Provider: "groq", APIKey: "test-groq_api_key", Model: "whisper-large-v3-turbo"}
		if !ok || s != want {
			t.Errorf("transcription service = %+v (%v, %q), want %+v", s, ok, why, want)
		}
		l = load(t, "transcription-openai-language")
		s, ok, why = l.Config.TranscriptionService()
		want = configs.TranscriptionService{Provider: "openai", APIKey: "test-openai_api_key", Language: "de"}
		if !ok || s != want {
			t.Errorf("transcription service with a language = %+v (%v, %q), want %+v", s, ok, why, want)
		}
	})
	t.Run("per-channel progress", func(t *testing.T) {
		l := load(t, "telegram-progress")
		cc := l.Config.Channels.Common("telegram")
		if cc.SendProgress == nil || !*cc.SendProgress || cc.SendToolHints == nil || *cc.SendToolHints {
			t.Errorf("telegram sendProgress/sendToolHints = %v/%v", cc.SendProgress, cc.SendToolHints)
		}
	})
	t.Run("feishu tool hint prefix", func(t *testing.T) {
		l := load(t, "feishu")
		if p := l.Config.Channels.Common("feishu").ToolHintPrefix; p == nil || *p != ">>" {
			t.Errorf("toolHintPrefix = %v", p)
		}
	})
	t.Run("matrix e2ee", func(t *testing.T) {
		l := load(t, "matrix-e2ee")
		if hasWarning(l, "channels.matrix.e2eeEnabled") {
			t.Errorf("e2eeEnabled is supported, yet warned about: %q", l.Warnings)
		}
		if !hasWarning(l, "channels.matrix.sasVerification: emoji (SAS) verification of the bot's device works when started from the bot's session") {
			t.Errorf("no specific note for sasVerification: %q", l.Warnings)
		}
		mx := matrix.DefaultConfig()
		if err := l.Config.Channels.Decode("matrix", &mx); err != nil {
			t.Fatal(err)
		}
		if !mx.E2EEEnabled || !mx.SASVerification {
			t.Errorf("e2eeEnabled/sasVerification = %v/%v, want both true in the Matrix channel's config", mx.E2EEEnabled, mx.SASVerification)
		}
	})
	t.Run("provider settings", func(t *testing.T) {
		l := load(t, "provider-custom-named")
		st := providerSettings(&l.Config, nil)["companyProxy"]
		if st.APIBase != "https://llm.company.example/v1" || st.ExtraBody["enable_thinking"] != true {
			t.Errorf("companyProxy settings = %+v (reasoningEffort low must switch thinking on)", st)
		}
		l = load(t, "provider-api-type-responses")
		if got := providerSettings(&l.Config, nil)["openai"].API; got != "responses" {
			t.Errorf("apiType responses gives api %q, want responses", got)
		}
	})
	t.Run("web disabled", func(t *testing.T) {
		l := load(t, "web-disabled")
		a := &app{loaded: l, log: slog.New(slog.DiscardHandler)}
		tools, err := builtinToolsIn(a, t.TempDir(), "none", nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, tl := range tools {
			if strings.HasPrefix(tl.Name(), "web_") {
				t.Errorf("tools.web.enable false still offers %s", tl.Name())
			}
		}
	})
}
