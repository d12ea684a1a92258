package feishu

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/nanobot-go/nanobot/channels"
	"github.com/nanobot-go/nanobot/configs"
)

func TestConfigValidate(t *testing.T) {
	ok := DefaultConfig()
	ok.AppID, ok.AppSecret = "cli_x", "secret"
	cases := []struct {
		name string
		edit func(*Config)
		want string // "" = valid
	}{
		{"defaults", func(*Config) {}, ""},
		{"lark", func(c *Config) { c.Domain = DomainLark }, ""},
		{"no app id", func(c *Config) { c.AppID = " " }, "appId is required"},
		{"no secret", func(c *Config) { c.AppSecret = "" }, "appSecret is required"},
		{"bad policy", func(c *Config) { c.GroupPolicy = "all" }, "groupPolicy"},
		{"bad domain", func(c *Config) { c.Domain = "larksuite" }, "domain"},
		{"bad apiBase", func(c *Config) { c.APIBase = "open.feishu.cn" }, "apiBase"},
		{"bad emoji", func(c *Config) { c.ReactEmoji = "a/b" }, "reactEmoji"},
		{"negative media", func(c *Config) { c.MaxMediaBytes = -1 }, "maxMediaBytes"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := ok
			tc.edit(&c)
			err := c.Validate()
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("Validate = %v, want nil", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("Validate = %v, want an error naming %q", err, tc.want)
			}
			if err != nil && strings.Contains(err.Error(), "secret") && c.AppSecret != "" && strings.Contains(err.Error(), c.AppSecret+" ") {
				t.Errorf("error shows the secret: %v", err)
			}
		})
	}
}

func TestConfigBase(t *testing.T) {
	c := DefaultConfig()
	if c.base() != BaseFeishu {
		t.Errorf("default base %q", c.base())
	}
	c.Domain = DomainLark
	if c.base() != BaseLark {
		t.Errorf("lark base %q", c.base())
	}
	c.APIBase = "http://127.0.0.1:9/"
	if c.base() != "http://127.0.0.1:9" {
		t.Errorf("apiBase %q", c.base())
	}
}

// TestFactoryDecodesNanobotKeys: a nanobot user's config block decodes
// over the defaults.
func TestFactoryDecodesNanobotKeys(t *testing.T) {
	raw := `{"feishu":{"enabled":true,"appId":"cli_a","appSecret":"s3cret","encryptKey":"ek","verificationToken":"vt",
		"groupPolicy":"open","domain":"lark","topicIsolation":false,"reactEmoji":"OK","allowFrom":["ou_1"]}}`
	var cc configs.ChannelsConfig
	if err := json.Unmarshal([]byte(raw), &cc); err != nil {
		t.Fatal(err)
	}
	ch, err := Factory().New(cc, channels.Deps{})
	if err != nil {
		t.Fatalf("Factory: %v", err)
	}
	c, ok := ch.(*Channel)
	if !ok {
		t.Fatalf("%T, want *Channel (streaming defaults to on)", ch)
	}
	got := c.cfg
	if got.AppID != "cli_a" || got.GroupPolicy != channels.GroupOpen || got.Domain != DomainLark || got.TopicIsolation || got.ReactEmoji != "OK" ||
		!got.Streaming || got.EncryptKey != "ek" || got.VerificationToken != "vt" || got.base() != BaseLark {
		t.Errorf("decoded %+v", got)
	}
	cc2 := configs.ChannelsConfig{}
	_ = json.Unmarshal([]byte(`{"feishu":{"enabled":true,"appId":"cli_a"}}`), &cc2)
	if _, err := Factory().New(cc2, channels.Deps{}); err == nil || !strings.Contains(err.Error(), "appSecret is required") {
		t.Errorf("missing secret: %v", err)
	}
}
