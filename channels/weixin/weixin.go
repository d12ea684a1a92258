// Package weixin is the WeChat (微信) channel for personal accounts, through
// Tencent's ilink bot API (the ClawBot plugin): the bot is logged in by
// scanning a QR code with WeChat (`nanobot channels login weixin`), then
// receives messages by HTTP long poll (POST ilink/bot/getupdates with a
// cursor) and answers with ilink/bot/sendmessage.
//
// WeChat only lets the bot answer someone who wrote to it: every message
// carries a context token, and a reply must carry the latest token of its
// user. The cursor and the context tokens are saved in the state folder
// (0600) after each batch was handed to the gateway, so a restart neither
// loses nor repeats messages. An errcode of -14 means the login expired:
// the channel stops and says to log in again.
//
// Only one-to-one chats exist. Text is sent as plain text (Markdown marks
// are removed), split at 1,800 characters; WeChat cannot edit messages.
// Images, files and videos come from WeChat's CDN encrypted with
// AES-128-ECB and are decrypted into the media folder; voice messages
// arrive with WeChat's transcript.
//
// Concurrency: Send uses only HTTP and may be called from any goroutine,
// concurrently with Run; the state it shares with Run (the login, the
// cursor, the users' context tokens) is under a lock and saved atomically.
// Run long-polls and delivers on its own goroutine, one message at a time,
// and starts no others. Login runs from `nanobot channels login`, not while
// the gateway runs the channel.
package weixin

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/nanobot-go/nanobot/channels"
	"github.com/nanobot-go/nanobot/channels/kit"
	"github.com/nanobot-go/nanobot/configs"
	"github.com/nanobot-go/nanobot/internal/redact"
)

// Config is channels.weixin.
type Config struct {
	configs.ChannelCommon
	// Token is a bot token; normally left empty, `nanobot channels login
	// weixin` obtains one and keeps it in the state folder.
	Token string `json:"token"`
	// BaseURL is the ilink API (default https://ilinkai.weixin.qq.com; a
	// login may name another, which is then used).
	BaseURL string `json:"baseUrl"`
	// CDNBaseURL is where attachments are downloaded from.
	CDNBaseURL string `json:"cdnBaseUrl"`
	// StateDir keeps the login, the cursor and the context tokens
	// (default <data>/state/weixin).
	StateDir string `json:"stateDir"`
	// PollTimeout is how long one long poll may wait, in seconds (35).
	PollTimeout int `json:"pollTimeout"`
	// MaxMediaBytes caps one attachment downloaded for the agent (20 MB).
	MaxMediaBytes int64 `json:"maxMediaBytes"`
}

// Defaults.
const (
	DefaultBaseURL    = "https://ilinkai.weixin.qq.com"
	DefaultCDNBaseURL = "https://novac2c.cdn.weixin.qq.com/c2c"
	channelVersion    = "1.0.2"
)

// DefaultConfig is disabled, with the defaults of every option.
func DefaultConfig() Config {
	return Config{BaseURL: DefaultBaseURL, CDNBaseURL: DefaultCDNBaseURL, PollTimeout: 35, MaxMediaBytes: 20 << 20}
}

// Validate checks the config; errors name the key under channels.weixin.
func (c Config) Validate() error {
	var p channels.Problems
	p.URL("baseUrl", c.BaseURL)
	p.URL("cdnBaseUrl", c.CDNBaseURL)
	if c.PollTimeout <= 0 || c.PollTimeout > 120 {
		p.Addf("pollTimeout: want 1 to 120 seconds, got %d", c.PollTimeout)
	}
	p.NonNegative("maxMediaBytes", c.MaxMediaBytes)
	return p.Err()
}

// Factory registers the channel: registry.Register("weixin", weixin.Factory()).
func Factory() channels.Factory {
	return channels.NewFactory("weixin", DefaultConfig, New)
}

// Channel is the WeChat adapter.
type Channel struct {
	cfg      Config
	log      *slog.Logger
	redact   *redact.Redactor
	http     *http.Client
	state    *state
	mediaDir string
	dedup    *kit.Dedup
	health   channels.HealthState

	// Timing, fixed by New; tests in this package shorten them.
	backoffMin, backoffMax time.Duration
	qrPoll                 time.Duration
}

var (
	_ channels.Channel        = (*Channel)(nil)
	_ channels.Limiter        = (*Channel)(nil)
	_ channels.LoginRunner    = (*Channel)(nil)
	_ channels.HealthReporter = (*Channel)(nil)
)

// New builds the channel. It does no IO beyond reading the saved state.
func New(cfg Config, deps channels.Deps) (*Channel, error) {
	channels.FillDefaults(&cfg, DefaultConfig())
	cfg.Token = strings.TrimSpace(cfg.Token)
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	dir := cfg.StateDir
	if dir == "" && deps.Paths.State != "" {
		dir = filepath.Join(deps.Paths.State, "weixin")
	}
	st, err := loadState(dir)
	if err != nil {
		return nil, err
	}
	c := &Channel{
		cfg: cfg, log: deps.Logger(), mediaDir: deps.MediaDir("weixin"), redact: deps.Redactor(cfg.Token, st.token()), state: st,
		http:  &http.Client{Timeout: time.Duration(cfg.PollTimeout)*time.Second + 20*time.Second},
		dedup: kit.NewDedup(0), backoffMin: time.Second, backoffMax: time.Minute, qrPoll: time.Second,
	}
	return c, nil
}

// Name implements channels.Channel.
func (c *Channel) Name() string { return "weixin" }

// MessageLimit implements channels.Limiter.
func (c *Channel) MessageLimit() int { return 1800 }

// Health implements channels.HealthReporter.
func (c *Channel) Health() channels.Health { return c.health.Get() }

// token is the bot token: the config's, else the saved login's.
func (c *Channel) token() string {
	if c.cfg.Token != "" {
		return c.cfg.Token
	}
	return c.state.token()
}

// base is the API root: a login's own base URL when it named one and the
// config kept the default.
func (c *Channel) base() string {
	if b := c.state.baseURL(); b != "" && c.cfg.BaseURL == DefaultBaseURL && c.cfg.Token == "" {
		return strings.TrimRight(b, "/")
	}
	return strings.TrimRight(c.cfg.BaseURL, "/")
}

// uin is the X-WECHAT-UIN header: base64 of a random uint32 in decimal,
// new for every request.
func uin() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return base64.StdEncoding.EncodeToString([]byte(strconv.FormatUint(uint64(binary.BigEndian.Uint32(b[:])), 10)))
}

// errStale is the ilink answer for an expired login.
var errStale = errors.New("weixin: the WeChat login expired (errcode -14); run `nanobot channels login weixin` again")

// apiError is an ilink answer with a non-zero ret or errcode.
type apiError struct {
	Op   string
	Code int
	Msg  string
}

func (e *apiError) Error() string {
	return fmt.Sprintf("weixin: %s: error %d: %s", e.Op, e.Code, e.Msg)
}

// call sends an ilink request (POST with a JSON body, or GET when body is
// nil) and decodes the answer; ret/errcode -14 is errStale.
func (c *Channel) call(ctx context.Context, path string, body any, out any, auth bool) error {
	method := http.MethodGet
	var req *http.Request
	var err error
	if body != nil {
		method = http.MethodPost
		b, merr := json.Marshal(body)
		if merr != nil {
			return merr
		}
		req, err = http.NewRequestWithContext(ctx, method, c.base()+"/"+path, strings.NewReader(string(b)))
		if err == nil {
			req.Header.Set("Content-Type", "application/json")
		}
	} else {
		req, err = http.NewRequestWithContext(ctx, method, c.base()+"/"+path, nil)
	}
	if err != nil {
		return fmt.Errorf("weixin: %s: %w", path, err)
	}
	req.Header.Set("iLink-App-Id", "bot")
	req.Header.Set("iLink-App-ClientVersion", "1")
	if auth {
		req.Header.Set("AuthorizationType", "ilink_bot_token")
		req.Header.Set("Authorization", "Bearer "+c.token())
		req.Header.Set("X-WECHAT-UIN", uin())
	}
	var raw json.RawMessage
	api := &kit.Client{HTTP: c.http, Redact: c.redact}
	if err := api.Send(req, &raw); err != nil {
		return fmt.Errorf("weixin: %w", err)
	}
	var env struct {
		Ret     *int   `json:"ret"`
		ErrCode *int   `json:"errcode"`
		ErrMsg  string `json:"errmsg"`
	}
	if len(raw) > 0 {
		_ = json.Unmarshal(raw, &env)
	}
	for _, code := range []*int{env.Ret, env.ErrCode} {
		if code == nil || *code == 0 {
			continue
		}
		if *code == -14 {
			return errStale
		}
		op, _, _ := strings.Cut(path, "?")
		return &apiError{Op: op, Code: *code, Msg: c.redact.String(env.ErrMsg)}
	}
	if out != nil && len(raw) > 0 {
		if err := json.Unmarshal(raw, out); err != nil {
			return fmt.Errorf("weixin: %s: unexpected answer: %w", path, err)
		}
	}
	return nil
}
