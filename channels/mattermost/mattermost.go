// Package mattermost is the Mattermost channel: a bot account (System
// Console > Integrations > Bot Accounts) that talks to users in direct
// messages and, when @mentioned, in public and private channels and group
// messages. No Mattermost Go driver is on our module proxy, so the package
// speaks the documented API v4 itself: the websocket event stream for
// receiving and REST for everything else, both with the bot's access token
// (Authorization: Bearer).
//
// Receiving: GET /api/v4/users/me names the bot (a 401 there is a rejected
// token: channels.Fatal), then /api/v4/websocket is dialled and the token
// sent with the authentication_challenge action. The server's OK confirms
// the connection (health: connected); its "hello" event names the
// connection id. "posted" events, whose data.post is a JSON string, go in
// order to one worker. The connection is kept alive with the "ping" action
// and dropped when nothing came back for two intervals; channels.Loop
// reconnects with backoff and jitter. A reconnect names the previous
// connection id and the next sequence number, so the server replays the
// events missed in between (Mattermost's reliable websockets); a server that
// cannot resumes with a new hello and the gap is lost (logged).
//
// Chats: ChatID is the Mattermost channel id. A DM (channel type "D") is a
// direct chat; channels ("O", "P") and group messages ("G") are groups,
// where groupPolicy applies (default: only posts that @mention the bot,
// with the mention stripped). A post in a thread (root_id) is its own
// session, "mattermost:<channel id>:<root id>", and answered in the thread;
// with replyInThread (the default) a top-level post in a channel starts a
// thread the same way. Replies in a thread the bot has posted in count as
// addressed to it (the last maxThreads such threads, until a restart).
// Sender ids are "<user id>|<username>".
//
// Sending: POST /api/v4/posts (messages up to 16383 characters; Mattermost
// renders Markdown, tables included, so text goes as is), streaming by PUT
// /api/v4/posts/{id}/patch, files by POST /api/v4/files and then file_ids
// on the post, typing by the websocket's user_typing action. Attachments
// users send are fetched with GET /api/v4/files/{id}.
//
// Concurrency: Send, Edit, SendMedia and Typing are called concurrently
// with each other and with Run; they use REST (Typing needs the live socket
// and fails while Run is reconnecting). Shared state is behind mu.
package mattermost

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/nanobot-go/nanobot/channels"
	"github.com/nanobot-go/nanobot/channels/kit"
	"github.com/nanobot-go/nanobot/configs"
	"github.com/nanobot-go/nanobot/internal/redact"
)

// Config is channels.mattermost.
type Config struct {
	configs.ChannelCommon
	// URL is the server's address ("https://chat.example.com").
	URL string `json:"url"`
	// Token is the bot account's access token (System Console >
	// Integrations > Bot Accounts > Create New Token).
	Token string `json:"token"`
	// GroupConfig: "mention" (default) answers in channels only posts that
	// @mention the bot; the allowlist lists channel ids. DMs are always
	// answered.
	channels.GroupConfig
	// ReplyInThread answers a top-level post in a channel in a thread under
	// it (default true); posts already in a thread are always answered there.
	ReplyInThread bool `json:"replyInThread"`
	// MaxMediaBytes caps one attachment, both ways (default 50 MB, the
	// server's default limit).
	MaxMediaBytes int64 `json:"maxMediaBytes"`
}

// DefaultConfig is disabled, with the defaults of every option.
func DefaultConfig() Config {
	return Config{GroupConfig: channels.GroupConfig{GroupPolicy: channels.GroupMention}, ReplyInThread: true, MaxMediaBytes: 50 << 20}
}

// Validate checks the config; errors name the key under
// channels.mattermost and never contain the token.
func (c Config) Validate() error {
	var p channels.Problems
	p.Required(c.URL, "url: required (the server's address, https://chat.example.com)")
	if strings.TrimSpace(c.URL) != "" {
		p.URL("url", c.URL)
	}
	p.Required(c.Token, "token: required (System Console > Integrations > Bot Accounts > Create New Token)")
	p.Add(c.GroupConfig.Check())
	p.NonNegative("maxMediaBytes", c.MaxMediaBytes)
	return p.Err()
}

// Factory registers the channel: registry.Register("mattermost", mattermost.Factory()).
func Factory() channels.Factory {
	return channels.NewFactory("mattermost", DefaultConfig, New)
}

// Channel is the Mattermost adapter.
type Channel struct {
	cfg      Config
	log      *slog.Logger
	redact   *redact.Redactor
	http     *http.Client
	api      *kit.Client
	wsURL    string
	mediaDir string // where attachments are saved ("" = not downloaded)
	health   channels.HealthState

	// Timing, fixed by New; tests in this package shorten them.
	editInterval           time.Duration
	pingEvery              time.Duration
	backoffMin, backoffMax time.Duration

	mu      sync.Mutex
	me      user
	conn    *wsConn // the live socket, for typing
	resume  resumePoint
	threads *kit.Dedup // root ids of threads the bot posted in
}

// user is the bot account.
type user struct {
	ID       string `json:"id"`
	Username string `json:"username"`
}

// resumePoint is where a reconnect picks the event stream up.
type resumePoint struct {
	connID string
	next   int64 // the seq of the next event expected
}

var (
	_ channels.Channel        = (*Channel)(nil)
	_ channels.Editor         = (*Channel)(nil)
	_ channels.Limiter        = (*Channel)(nil)
	_ channels.Typer          = (*Channel)(nil)
	_ channels.MediaSender    = (*Channel)(nil)
	_ channels.HealthReporter = (*Channel)(nil)
)

// New builds the channel. It does no IO: Run connects.
func New(cfg Config, deps channels.Deps) (*Channel, error) {
	channels.FillDefaults(&cfg, DefaultConfig())
	cfg.URL, cfg.Token = strings.TrimRight(strings.TrimSpace(cfg.URL), "/"), strings.TrimSpace(cfg.Token)
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	u, _ := url.Parse(cfg.URL) // checked by Validate
	switch u.Scheme {
	case "https":
		u.Scheme = "wss"
	default:
		u.Scheme = "ws"
	}
	u.Path = strings.TrimRight(u.Path, "/") + "/api/v4/websocket"
	rd := deps.Redactor(cfg.Token)
	hc := &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone(), Timeout: 2 * time.Minute}
	c := &Channel{
		cfg:          cfg,
		log:          deps.Logger(),
		redact:       rd,
		mediaDir:     deps.MediaDir("mattermost"),
		http:         hc,
		wsURL:        u.String(),
		editInterval: time.Second,
		pingEvery:    30 * time.Second,
		backoffMin:   time.Second,
		backoffMax:   time.Minute,
		threads:      kit.NewDedup(maxThreads),
	}
	c.api = &kit.Client{Base: cfg.URL + "/api/v4", HTTP: hc, Redact: rd, Check: checkError, Auth: c.authorize}
	return c, nil
}

func (c *Channel) authorize(_ context.Context, req *http.Request) error {
	req.Header.Set("Authorization", "Bearer "+c.cfg.Token)
	return nil
}

// Name implements channels.Channel.
func (c *Channel) Name() string { return "mattermost" }

// MessageLimit implements channels.Limiter: Mattermost's 16383 characters.
func (c *Channel) MessageLimit() int { return 16383 }

// EditInterval implements channels.Editor. Mattermost's default rate limit
// is 10 requests per second per user; one edit a second leaves room for
// other chats.
func (c *Channel) EditInterval() time.Duration { return c.editInterval }

// Health implements channels.HealthReporter.
func (c *Channel) Health() channels.Health { return c.health.Get() }

func (c *Channel) self() user {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.me
}

// ErrUnauthorized is returned by Run (as a channels.FatalError) when the
// server rejects the token.
var ErrUnauthorized = errors.New("mattermost: the server rejected the bot token; check channels.mattermost.token (System Console > Integrations > Bot Accounts)")

// eventQueue is how many posts may wait for the worker; when it is full the
// socket reader waits (back-pressure).
const eventQueue = 256

// Run connects and delivers posts to in until ctx ends; it returns nil
// then. A rejected token ends it early with a channels.FatalError.
func (c *Channel) Run(ctx context.Context, in channels.Inbox) error {
	events := make(chan []byte, eventQueue)
	stop := channels.Work(ctx, events, func(ctx context.Context, data []byte) { c.handle(ctx, in, data) })
	loop := &channels.Loop{Name: "mattermost", Log: c.log, Health: &c.health, Redact: c.redact.Error, Min: c.backoffMin, Max: c.backoffMax}
	err := loop.Run(ctx, func(ctx context.Context, up func()) error { return c.connect(ctx, up, events) })
	stop()
	c.http.CloseIdleConnections()
	return err
}

// fetchMe reads the bot's own account.
func (c *Channel) fetchMe(ctx context.Context) error {
	var me user
	if err := c.api.Do(ctx, http.MethodGet, "/users/me", nil, &me); err != nil {
		if kit.Unauthorized(err) {
			return channels.Fatal(fmt.Errorf("%w (%s)", ErrUnauthorized, c.redact.Error(err)))
		}
		return fmt.Errorf("mattermost: GET /users/me: %w", err)
	}
	if me.ID == "" {
		return errors.New("mattermost: GET /users/me answered without an id")
	}
	c.mu.Lock()
	c.me = me
	c.mu.Unlock()
	return nil
}

// maxThreads is how many threads the bot remembers having answered in;
// replies in them need no @mention.
const maxThreads = 1000

// answeredIn records that the bot posted in thread root.
func (c *Channel) answeredIn(root string) {
	if root != "" {
		c.threads.Seen(root)
	}
}

// inThread reports whether the bot posted in thread root.
func (c *Channel) inThread(root string) bool {
	return root != "" && c.threads.Has(root)
}
