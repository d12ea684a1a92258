// Package matrix is the Matrix channel: a client-server API client on
// mautrix-go that logs in with an access token (or a password), long-polls
// /sync with its own loop (the sync token is saved only after the events of
// a batch were delivered, so a crash replays rather than loses), joins rooms
// it is invited to by allowed users, answers in direct chats and rooms
// (groupPolicy open / mention / allowlist), treats threads as sessions,
// sends Markdown as HTML formatted_body, streams by m.replace edits, shows
// typing, and carries media both ways.
//
// With e2eeEnabled it is also a Matrix device with end-to-end encryption
// (mautrix's crypto with the pure-Go goolm, selected by the goolm build tag;
// see crypto.go): it decrypts and answers in encrypted rooms and encrypts its
// replies there, and with sasVerification it answers emoji verification of
// its device (verify.go). The crypto state lives in the instance's state
// folder and survives restarts.
//
// Concurrency: Run owns the sync loop and the crypto machine; Send, Edit,
// Typing and SendMedia may be called from any goroutine while Run runs.
// Messages whose room key arrives late are decrypted by a goroutine Run
// starts and waits for before it returns; only messages of senders the
// inbox admits wait, at most maxKeyWaits at once.
package matrix

import (
	"fmt"
	"log/slog"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	"maunium.net/go/mautrix"
	"maunium.net/go/mautrix/id"

	"github.com/nanobot-go/nanobot/channels"
	"github.com/nanobot-go/nanobot/configs"
	"github.com/nanobot-go/nanobot/internal/redact"
)

// Config is channels.matrix.
type Config struct {
	configs.ChannelCommon
	// Homeserver is the client-server API base, e.g. https://matrix.org.
	Homeserver string `json:"homeserver"`
	// UserID is the bot's full id, "@bot:example.org".
	UserID string `json:"userId"`
	// AccessToken authenticates the bot (preferred). Without it, Password
	// is used to log in at start.
	AccessToken string `json:"accessToken"`
	Password    string `json:"password"`
	// DeviceID names the bot's device (optional; the homeserver assigns
	// one at password login).
	DeviceID string `json:"deviceId"`
	// GroupConfig: "mention" (default) answers in rooms when the bot is
	// mentioned or replied to; the allowlist lists room ids
	// ("!abc:example.org").
	channels.GroupConfig
	// AutoJoin joins rooms the bot is invited to by a sender on allowFrom
	// (default true).
	AutoJoin *bool `json:"autoJoin"`
	// MaxMediaBytes caps one attachment, both ways (default 20 MB).
	MaxMediaBytes int64 `json:"maxMediaBytes"`
	// E2EEEnabled makes the bot an end-to-end encryption capable device:
	// it reads encrypted rooms and encrypts its replies there (default
	// false: encrypted rooms are not read). Needs the state folder and a
	// binary built with the goolm tag (the release builds are).
	E2EEEnabled bool `json:"e2eeEnabled"`
	// E2EE is the spelling this program used before e2eeEnabled; either
	// switches encryption on.
	E2EE bool `json:"e2ee"`
	// SASVerification accepts interactive (emoji) verification of the
	// bot's device from users on allowFrom (with e2eeEnabled): the emoji
	// and numbers are logged for the operator to compare, and the bot
	// confirms its side (default false: requests are ignored).
	SASVerification bool `json:"sasVerification"`
}

func (c Config) e2ee() bool { return c.E2EEEnabled || c.E2EE }

// DefaultConfig is disabled, with the defaults of every option.
func DefaultConfig() Config {
	return Config{GroupConfig: channels.GroupConfig{GroupPolicy: channels.GroupMention}, MaxMediaBytes: 20 << 20}
}

func (c Config) autoJoin() bool { return c.AutoJoin == nil || *c.AutoJoin }

// Validate checks the config; errors name the key under channels.matrix.
func (c Config) Validate() error {
	var p channels.Problems
	p.URL("homeserver", c.Homeserver)
	if _, _, err := id.UserID(c.UserID).Parse(); err != nil {
		p.Addf(`userId: %q is not a Matrix user id ("@bot:example.org")`, c.UserID)
	}
	if c.AccessToken == "" && c.Password == "" {
		p.Addf("accessToken: required (or password)")
	}
	p.Add(c.GroupConfig.Check())
	p.NonNegative("maxMediaBytes", c.MaxMediaBytes)
	return p.Err()
}

// Factory registers the channel: registry.Register("matrix", matrix.Factory()).
func Factory() channels.Factory {
	return channels.NewFactory("matrix", DefaultConfig, New)
}

// Channel is the Matrix adapter.
type Channel struct {
	cfg      Config
	log      *slog.Logger
	redact   *redact.Redactor
	cli      *mautrix.Client
	me       id.UserID
	nameRE   *regexp.Regexp // the bot's localpart as a word ("nanobot: hi")
	mediaDir string         // "" = attachments are not downloaded
	state    string         // file holding the sync token
	stateDir string         // the instance's state folder ("" = none)
	pending  sync.WaitGroup // decryptions waiting for a late room key
	keyWaits chan struct{}  // a slot per message waiting for its room key (maxKeyWaits)

	// Timing, fixed by New; tests in this package shorten them.
	editInterval time.Duration
	backoffMin   time.Duration
	backoffMax   time.Duration
	pollTimeout  time.Duration

	health channels.HealthState

	mu      sync.Mutex
	members map[id.RoomID]int   // joined member count per room (DM = 2)
	seen    map[id.EventID]bool // events handled by this process
	seenQ   []id.EventID        // oldest first, to bound seen
	// plainWarned: rooms whose encrypted messages were reported as
	// unreadable (encryption off); prepared: encrypted rooms made ready
	// for sending by this process.
	plainWarned map[id.RoomID]bool
	prepared    map[id.RoomID]bool
	crypto      cryptoEngine // nil = no end-to-end encryption; Run sets it
}

var (
	_ channels.Channel        = (*Channel)(nil)
	_ channels.Editor         = (*Channel)(nil)
	_ channels.Limiter        = (*Channel)(nil)
	_ channels.Typer          = (*Channel)(nil)
	_ channels.MediaSender    = (*Channel)(nil)
	_ channels.HealthReporter = (*Channel)(nil)
)

// New builds the channel. It does no IO: Run logs in and syncs.
func New(cfg Config, deps channels.Deps) (*Channel, error) {
	channels.FillDefaults(&cfg, DefaultConfig())
	cfg.Homeserver = strings.TrimRight(cfg.Homeserver, "/")
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cli, err := mautrix.NewClient(cfg.Homeserver, id.UserID(cfg.UserID), cfg.AccessToken)
	if err != nil {
		return nil, fmt.Errorf("matrix: homeserver: %w", err)
	}
	cli.DeviceID = id.DeviceID(cfg.DeviceID)
	// Requests get their own deadlines; /sync long-polls for pollTimeout.
	cli.Client = &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone(), Timeout: 2 * time.Minute}
	cli.DefaultHTTPRetries = 0 // the dispatcher and the sync loop retry
	c := &Channel{
		cfg: cfg, log: deps.Logger(), redact: deps.Redactor(cfg.AccessToken, cfg.Password), cli: cli, me: id.UserID(cfg.UserID), mediaDir: deps.MediaDir("matrix"),
		nameRE:       regexp.MustCompile(`(?i)(^|[^\w])` + regexp.QuoteMeta(id.UserID(cfg.UserID).Localpart()) + `($|[^\w])`),
		editInterval: time.Second, backoffMin: 500 * time.Millisecond, backoffMax: time.Minute,
		pollTimeout: 30 * time.Second,
		members:     map[id.RoomID]int{}, seen: map[id.EventID]bool{}, keyWaits: make(chan struct{}, maxKeyWaits),
		plainWarned: map[id.RoomID]bool{}, prepared: map[id.RoomID]bool{},
	}
	if deps.Paths.State != "" {
		c.state = filepath.Join(deps.Paths.State, "matrix-sync.json")
		c.stateDir = deps.Paths.State
	}
	return c, nil
}

// Name implements channels.Channel.
func (c *Channel) Name() string { return "matrix" }

// MessageLimit implements channels.Limiter. An event may be 64 KiB; the
// text is sent twice (plain body and HTML), so replies are split well below.
func (c *Channel) MessageLimit() int { return 16000 }

// EditInterval implements channels.Editor.
func (c *Channel) EditInterval() time.Duration { return c.editInterval }

// Health implements channels.HealthReporter.
func (c *Channel) Health() channels.Health { return c.health.Get() }
