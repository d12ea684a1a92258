// Package whatsapp is the WhatsApp channel: a native multi-device client
// on whatsmeow (the bot is a linked device of a WhatsApp account, paired
// once with `nanobot channels login whatsapp` by QR code or pairing code),
// with the device keys in one file of the state folder (package devstore,
// no database). It answers
// in private chats and groups (groupPolicy open / mention), maps the
// privacy ids WhatsApp now uses (LIDs) to phone numbers for allowFrom, and
// carries text, images, voice notes and documents both ways.
//
// The adapter talks to whatsmeow through the small client interface, so
// its translation (events to bus.Inbound, bus.Outbound to messages) and
// the login flow are tested without WhatsApp's servers, which cannot run
// here; see README.md for exactly what is verified.
//
// Concurrency: Send, SendMedia, SendVoice and Typing may be called from any
// goroutine, concurrently with Run and with each other; they take the client
// Run publishes under a lock and fail, retryably, while Run is not running.
// whatsmeow owns the connection and its goroutines (it reconnects by itself)
// and calls the event handler on them; Run disconnects the client before it
// returns, and events that arrive after that are dropped. Login runs from
// `nanobot channels login`, not while the gateway runs the channel.
package whatsapp

import (
	"context"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"go.mau.fi/whatsmeow"
	"go.mau.fi/whatsmeow/proto/waE2E"
	"go.mau.fi/whatsmeow/types"

	"github.com/nanobot-go/nanobot/channels"
	"github.com/nanobot-go/nanobot/configs"
)

// Config is channels.whatsapp.
type Config struct {
	configs.ChannelCommon
	// GroupConfig: "mention" (default) answers in groups when mentioned
	// or replied to; the allowlist lists group JIDs ("120363...@g.us").
	channels.GroupConfig
	// MaxMediaBytes caps one attachment, both ways (default 16 MB).
	MaxMediaBytes int64 `json:"maxMediaBytes"`
	// PairPhone, when set, makes `nanobot channels login whatsapp` show a
	// pairing code to type on that phone instead of a QR code
	// (international format, digits only).
	PairPhone string `json:"pairPhone"`
}

// DefaultConfig is disabled, with the defaults of every option.
func DefaultConfig() Config {
	return Config{GroupConfig: channels.GroupConfig{GroupPolicy: channels.GroupMention}, MaxMediaBytes: 16 << 20}
}

// Validate checks the config; errors name the key under channels.whatsapp.
func (c Config) Validate() error {
	var p channels.Problems
	p.Add(c.GroupConfig.Check())
	p.NonNegative("maxMediaBytes", c.MaxMediaBytes)
	if phone := strings.TrimPrefix(c.PairPhone, "+"); phone != "" && strings.Trim(phone, "0123456789") != "" {
		p.Addf("pairPhone: %q is not a phone number in international format (digits only)", c.PairPhone)
	}
	return p.Err()
}

// Factory registers the channel: registry.Register("whatsapp", whatsapp.Factory()).
func Factory() channels.Factory {
	return channels.NewFactory("whatsapp", DefaultConfig, New)
}

// client is the part of *whatsmeow.Client the adapter uses.
type client interface {
	Connect() error
	Disconnect()
	IsLoggedIn() bool
	AddEventHandler(whatsmeow.EventHandler) uint32
	SendMessage(ctx context.Context, to types.JID, msg *waE2E.Message, extra ...whatsmeow.SendRequestExtra) (whatsmeow.SendResponse, error)
	Upload(ctx context.Context, data []byte, kind whatsmeow.MediaType) (whatsmeow.UploadResponse, error)
	Download(ctx context.Context, msg whatsmeow.DownloadableMessage) ([]byte, error)
	SendChatPresence(ctx context.Context, jid types.JID, state types.ChatPresence, media types.ChatPresenceMedia) error
	MarkRead(ctx context.Context, ids []types.MessageID, ts time.Time, chat, sender types.JID, extra ...types.ReceiptType) error
	GetQRChannel(ctx context.Context) (<-chan whatsmeow.QRChannelItem, error)
	PairPhone(ctx context.Context, phone string, showNotification bool, ct whatsmeow.PairClientType, name string) (string, error)
	// Own are the account's phone-number and LID addresses.
	Own() (pn, lid types.JID)
	// PhoneOf maps a LID to the phone-number address, if known.
	PhoneOf(ctx context.Context, lid types.JID) (types.JID, error)
}

// Channel is the WhatsApp adapter.
type Channel struct {
	cfg Config
	log *slog.Logger
	// storePath is the device store (devstore); legacyPath the SQLite
	// whatsapp.db of earlier versions, which this build cannot read.
	storePath, legacyPath string
	mediaDir              string
	// open connects to the device store and builds the client; tests
	// replace it with a fake.
	open func(ctx context.Context) (client, func(), error)

	backoffMin, backoffMax time.Duration
	health                 channels.HealthState

	mu    sync.Mutex
	cli   client
	inbox channels.Inbox
	ctx   context.Context // of the current Run, for event handlers
}

var (
	_ channels.Channel        = (*Channel)(nil)
	_ channels.Limiter        = (*Channel)(nil)
	_ channels.Typer          = (*Channel)(nil)
	_ channels.MediaSender    = (*Channel)(nil)
	_ channels.LoginRunner    = (*Channel)(nil)
	_ channels.HealthReporter = (*Channel)(nil)
)

// New builds the channel; nothing is opened until Run or Login.
func New(cfg Config, deps channels.Deps) (*Channel, error) {
	channels.FillDefaults(&cfg, DefaultConfig())
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	c := &Channel{cfg: cfg, log: deps.Logger(), mediaDir: deps.MediaDir("whatsapp"), backoffMin: time.Second, backoffMax: 2 * time.Minute}
	if deps.Paths.State != "" {
		c.storePath = filepath.Join(deps.Paths.State, StoreFile)
		c.legacyPath = filepath.Join(deps.Paths.State, LegacyStoreFile)
	}
	c.open = c.openStore
	return c, nil
}

// Name implements channels.Channel.
func (c *Channel) Name() string { return "whatsapp" }

// MessageLimit implements channels.Limiter: WhatsApp takes long texts, but
// they read badly on a phone beyond a few thousand characters.
func (c *Channel) MessageLimit() int { return 4000 }

// Health implements channels.HealthReporter.
func (c *Channel) Health() channels.Health { return c.health.Get() }

// realClient adds the account lookups to *whatsmeow.Client.
type realClient struct{ *whatsmeow.Client }

func (r realClient) Own() (pn, lid types.JID) {
	if r.Store.ID != nil {
		pn = r.Store.ID.ToNonAD()
	}
	return pn, r.Store.LID.ToNonAD()
}

func (r realClient) PhoneOf(ctx context.Context, lid types.JID) (types.JID, error) {
	return r.Store.LIDs.GetPNForLID(ctx, lid)
}
