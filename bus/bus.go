// Package bus carries messages between the chat channels and the agent: an
// inbound queue (channels, sub-agents, cron and heartbeat publish; the agent
// loop consumes) and an outbound queue (the agent publishes; the dispatcher
// consumes and delivers to the channels). It also describes the chat
// commands (Command) the agent answers and channels offer in their
// platforms' command menus. It imports nothing of ours, so every package
// may use its types.
//
// Concurrency: any number of goroutines may publish; each queue has exactly
// one consumer (the agent loop for inbound, the dispatcher for outbound).
// The in-memory Bus runs one goroutine per queue, from New until Close and
// the consumer's receive of the last queued message.
//
// Back-pressure: both queues are bounded (see New). A publisher blocks while
// its queue is full, until there is room or its context ends, in which case
// Publish returns the context's error and the message is not queued — the
// caller still owns it (a channel adapter then does not acknowledge the
// platform message, so the platform redelivers it; the agent retries its
// send). Nothing is dropped silently. After Close, Publish returns ErrClosed.
package bus

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"
)

// Media is an attachment of a message: a file on disk (downloaded by the
// adapter into the media folder) or a remote URL.
type Media struct {
	// Path is a local file.
	Path string `json:"path,omitempty"`
	// URL is a remote location, used when there is no local copy.
	URL string `json:"url,omitempty"`
	// MIMEType is the content type, e.g. "image/jpeg", "audio/ogg".
	MIMEType string `json:"mimeType,omitempty"`
	// Name is the original file name, if any.
	Name string `json:"name,omitempty"`
	// Size in bytes, 0 if unknown.
	Size int64 `json:"size,omitempty"`
	// Transcript is what is said in an audio attachment. The agent fills
	// it in before the turn when transcription is configured; an adapter
	// whose platform transcribed the audio may set it, and the agent then
	// leaves the audio alone.
	Transcript string `json:"transcript,omitempty"`
}

// IsImage reports whether the attachment is an image.
func (m Media) IsImage() bool { return len(m.MIMEType) > 6 && m.MIMEType[:6] == "image/" }

// Inbound is a message for the agent.
type Inbound struct {
	// Channel is the platform ("telegram", "web", ...).
	Channel string `json:"channel"`
	// SenderID identifies the author on the platform ("id|username" on
	// Telegram).
	SenderID string `json:"senderId"`
	// ChatID identifies the conversation on the platform.
	ChatID string `json:"chatId"`
	// Content is the message text.
	Content string `json:"content"`
	// Media are the attachments.
	Media []Media `json:"media,omitempty"`
	// MessageID is the platform's id of this message, used to de-duplicate
	// redeliveries and to reply to it.
	MessageID string `json:"messageId,omitempty"`
	// Metadata carries platform details the channel needs back (thread
	// ids, the platform's message id, ...), passed through untouched.
	// Nothing but the platform's own adapter reads it.
	Metadata Metadata `json:"metadata,omitempty"`
	// IsGroup is true for group chats and channels, false for direct
	// messages. Pairing is offered only in direct chats.
	IsGroup bool `json:"isGroup,omitempty"`
	// Admin is true when the sender may run state-changing chat commands
	// such as "/pairing approve". Only two parties set it: a channel that
	// can vouch for the connection itself (the web chat, for a genuine
	// loopback browser or one that presented the access token), and the
	// access gate for senders on the channel's admins list. Adapters never
	// copy it from platform data.
	Admin bool `json:"admin,omitempty"`
	// SessionKey overrides the default session key "channel:chat_id", e.g. to
	// give each Slack thread its own conversation.
	SessionKey string `json:"sessionKey,omitempty"`
	// ReceivedAt is when the adapter received the message.
	ReceivedAt time.Time `json:"receivedAt"`
	// ID is assigned by the gateway when the message is journaled; the
	// agent reports it back when the message is done.
	ID string `json:"id,omitempty"`

	// Control data: set by whoever produces the message, read by the agent.
	// These are typed fields, never keys in Metadata.

	// Source says who produced the message (a person on a channel unless
	// set).
	Source Source `json:"source,omitempty"`
	// SourceRef identifies the producer within its source: the cron job id,
	// the sub-agent id.
	SourceRef string `json:"sourceRef,omitempty"`
	// MaxHistory limits how many history messages the turn sees (0: the
	// session's whole legal window).
	MaxHistory int `json:"maxHistory,omitempty"`
	// Background marks a turn nobody is waiting for (the heartbeat): no
	// typing, no streaming, no tool hints, and a reply that IsSilent is not
	// delivered.
	Background bool `json:"background,omitempty"`
	// Replayed is set when the gateway delivers the message again after a
	// restart (it was journalled but its turn never finished).
	Replayed bool `json:"replayed,omitempty"`
	// Stop asks the agent to stop the session's running turn and drop what
	// it has queued, as a person's /stop does; the message has no content
	// and is not a turn (an API client that went away sends it).
	Stop bool `json:"stop,omitempty"`
	// Ephemeral marks a turn whose conversation the sender supplies (the
	// OpenAI-compatible API without a session id): the agent runs it on
	// History and Content, and neither loads nor stores a session.
	Ephemeral bool `json:"ephemeral,omitempty"`
	// History is the conversation before Content of an Ephemeral turn,
	// oldest first.
	History []Turn `json:"history,omitempty"`
	// FromBot is set by adapters when the platform says another bot wrote
	// the message (Telegram is_bot); the gateway ignores such messages
	// unless agents.defaults.allowBotMessages.
	FromBot bool `json:"fromBot,omitempty"`
	// ThreadID is the platform thread the message belongs to (a Telegram
	// forum topic, a Slack thread, a Matrix thread): routing rules match
	// it, and the replies carry it back (Outbound.ThreadID).
	ThreadID string `json:"threadId,omitempty"`
	// Agent names the agent that handles the message: set by the router,
	// or by an agent for its own sub-agents' results ("" = route by the
	// bindings).
	Agent string `json:"agent,omitempty"`
	// ModelPreset is the model a binding picks for this chat ("" = the
	// agent's); a /model choice in the chat wins over it.
	ModelPreset string `json:"modelPreset,omitempty"`
	// DenyTools are tools a binding withholds in this chat.
	DenyTools []string `json:"denyTools,omitempty"`
	// Voice is set by adapters when the user spoke (a voice note, in
	// Media or transcribed by the platform in Content): with voice replies
	// configured the answer is spoken too.
	Voice bool `json:"voice,omitempty"`
	// QueueMode is the queue mode a binding picks for this chat ("" = the
	// agent's default for direct or group chats); a /queue choice in the
	// chat wins over it.
	QueueMode string `json:"queueMode,omitempty"`
}

// Turn is one message of a conversation the sender supplies (see
// Inbound.History).
type Turn struct {
	// Role is "user" or "assistant".
	Role string `json:"role"`
	// Content is the message text.
	Content string `json:"content"`
}

// Usage counts the tokens a turn used across its model calls. CachedTokens
// are the prompt tokens read from the provider's cache (part of
// PromptTokens), ReasoningTokens the completion tokens spent thinking
// (part of CompletionTokens).
type Usage struct {
	PromptTokens     int `json:"promptTokens"`
	CompletionTokens int `json:"completionTokens"`
	CachedTokens     int `json:"cachedTokens,omitempty"`
	ReasoningTokens  int `json:"reasoningTokens,omitempty"`
}

// Key is the session key of the message: its SessionKey, or the chat's
// (SessionKeyOf(Channel, ChatID)).
func (m Inbound) Key() string {
	if m.SessionKey != "" {
		return m.SessionKey
	}
	return SessionKeyOf(m.Channel, m.ChatID)
}

// SessionKeyOf is the one way a session key is written: the channel, the
// chat, and what divides the chat further (a topic, a thread, a sender),
// joined by ":" — "telegram:-100888:topic:42". A key is never split back
// into its parts: a session records its channel and chat (session.Origin).
func SessionKeyOf(channel, chatID string, within ...string) string {
	return strings.Join(append([]string{channel, chatID}, within...), ":")
}

// Kind says what an Outbound is.
type Kind int

const (
	// KindMessage is a complete message.
	KindMessage Kind = iota
	// KindDelta is a piece of a streamed reply; deltas with the same
	// StreamID concatenate.
	KindDelta
	// KindStreamEnd closes the stream StreamID; Content is the full text
	// (with Interrupted, the text streamed so far). Every stream that
	// had a delta gets exactly one.
	KindStreamEnd
	// KindProgress is intermediate text while the agent works.
	KindProgress
	// KindToolHint is a one-line note of a tool call ("🔧 exec: ls").
	KindToolHint
	// KindTyping asks the channel to show (or refresh) a typing indicator.
	KindTyping
)

func (k Kind) String() string {
	switch k {
	case KindMessage:
		return "message"
	case KindDelta:
		return "delta"
	case KindStreamEnd:
		return "stream_end"
	case KindProgress:
		return "progress"
	case KindToolHint:
		return "tool_hint"
	case KindTyping:
		return "typing"
	}
	return "unknown"
}

// Outbound is a message for a channel.
type Outbound struct {
	// Channel and ChatID are the target.
	Channel string `json:"channel"`
	ChatID  string `json:"chatId"`
	Kind    Kind   `json:"kind"`
	// Content is the text (Markdown; the channel converts it).
	Content string `json:"content"`
	// Media are files to attach.
	Media []Media `json:"media,omitempty"`
	// Voice marks a spoken reply: Media[0] is Ogg/Opus audio that a
	// channels.VoiceSender sends as a voice message (other channels with
	// media send it as an audio file).
	Voice bool `json:"voice,omitempty"`
	// ReplyTo is the platform message id this answers, if the channel
	// should thread or quote it.
	ReplyTo string `json:"replyTo,omitempty"`
	// StreamID groups the deltas of one streamed reply.
	StreamID string `json:"streamId,omitempty"`
	// Final marks the turn's last message: the channel may stop typing.
	Final bool `json:"final,omitempty"`
	// IsError marks a message that reports a failure to the user.
	IsError bool `json:"isError,omitempty"`
	// Interrupted marks a KindStreamEnd of a stream the turn did not
	// finish (/stop, an interrupting message, a provider error, the
	// gateway stopping): Content is the text streamed so far. It is never
	// Final (the turn's last word, if any, is another message), so a turn
	// run again after a restart still answers. The channel finishes what
	// it shows ("generating" ends) and sends nothing new.
	Interrupted bool `json:"interrupted,omitempty"`
	// Usage is set on a turn's final reply: the tokens of all its model
	// calls (nil when unknown).
	Usage *Usage `json:"usage,omitempty"`
	// Metadata carries what else the channel needs back: the inbound
	// message's Metadata, untouched.
	Metadata Metadata `json:"metadata,omitempty"`
	// ThreadID is the platform thread to answer in (a Telegram forum topic,
	// a Slack thread, a Matrix thread): the inbound message's ThreadID.
	ThreadID string `json:"threadId,omitempty"`
	// SessionKey is the conversation this belongs to.
	SessionKey string `json:"sessionKey,omitempty"`
	// Turn is the gateway id (Inbound.ID) of the message this answers, if
	// any: the outbox knows by it which turns were answered already.
	Turn string `json:"turn,omitempty"`
	// Actions are buttons to show under the message (a Telegram inline
	// keyboard); pressing one sends its Command back as if the presser had
	// typed it. Channels without buttons ignore them, so Content must name
	// the commands too. Only the last part of a split message has them.
	Actions []Action `json:"actions,omitempty"`
	// IdempotencyKey is set by the dispatcher on each part of a durable
	// message, the same in every attempt and after a restart. A channel
	// whose platform de-duplicates sends by a client key passes it on, so
	// a send repeated after a crash shows once.
	IdempotencyKey string `json:"idempotencyKey,omitempty"`
	// ID is assigned by a durable queue (the NATS bus, or the outbox of
	// a single gateway) so the dispatcher can report the message delivered.
	ID string `json:"-"`
}

// Action is a button offered with a message.
type Action struct {
	// Label is the button's text.
	Label string `json:"label"`
	// Command is the chat command pressing it sends ("/approve k3f9m2ab").
	Command string `json:"command"`
}

// ErrClosed is returned by Publish after Close.
var ErrClosed = errors.New("bus: closed")

// Bus is the in-memory implementation: two bounded queues, each served by
// a goroutine of its own from New until Close and the consumer's drain.
type Bus struct {
	in  *queue[Inbound]
	out *queue[Outbound]

	mu        sync.RWMutex
	closed    bool
	done      chan struct{}
	closeOnce sync.Once
}

// Default queue sizes: deep enough to absorb a burst from every channel
// while the agent is at its concurrency cap. A queue takes memory only for
// the messages it holds.
const (
	DefaultInboundCap  = 1024
	DefaultOutboundCap = 4096
)

// New returns a bus whose queues hold up to inCap and outCap messages
// (defaults when <= 0).
func New(inCap, outCap int) *Bus {
	if inCap <= 0 {
		inCap = DefaultInboundCap
	}
	if outCap <= 0 {
		outCap = DefaultOutboundCap
	}
	return &Bus{in: newQueue[Inbound](inCap), out: newQueue[Outbound](outCap), done: make(chan struct{})}
}

// PublishInbound queues m for the agent, blocking while the queue is full.
func (b *Bus) PublishInbound(ctx context.Context, m Inbound) error {
	return publish(ctx, b, b.in.intake, m)
}

// PublishOutbound queues m for the dispatcher, blocking while the queue is
// full.
func (b *Bus) PublishOutbound(ctx context.Context, m Outbound) error {
	return publish(ctx, b, b.out.intake, m)
}

func publish[T any](ctx context.Context, b *Bus, ch chan T, m T) error {
	b.mu.RLock()
	defer b.mu.RUnlock()
	if b.closed {
		return ErrClosed
	}
	select {
	case ch <- m:
		return nil
	default:
	}
	select {
	case ch <- m:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-b.done:
		return ErrClosed
	}
}

// Inbound is the agent loop's receive side. It is closed by Close.
func (b *Bus) Inbound() <-chan Inbound { return b.in.recv }

// Outbound is the dispatcher's receive side. It is closed by Close.
func (b *Bus) Outbound() <-chan Outbound { return b.out.recv }

// Depth returns the number of queued inbound and outbound messages.
func (b *Bus) Depth() (in, out int) { return int(b.in.held.Load()), int(b.out.held.Load()) }

// Close stops intake: blocked and later publishers get ErrClosed, and both
// receive channels are closed once their queued messages are drained by the
// consumers (queued messages are still delivered). It may be called any
// number of times, also concurrently; every call returns once publishers
// are refused.
func (b *Bus) Close() {
	b.closeOnce.Do(func() {
		close(b.done) // wake blocked publishers before taking the write lock
		b.mu.Lock()
		defer b.mu.Unlock()
		b.closed = true
		close(b.in.intake)
		close(b.out.intake)
	})
}
