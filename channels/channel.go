package channels

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nanobot-go/nanobot/bus"
)

// Channel is one chat platform adapter.
//
// Concurrency: the Manager calls Run from one goroutine, never twice at
// once, and calls it again after it returned with an error. The dispatcher
// calls Send (and Edit, Finish, Typing, SendMedia of the optional
// interfaces) from one goroutine per chat, so calls for different chats
// run concurrently, while calls for one chat come one after another. These
// calls also come while Run is reconnecting, before Run started and after
// it returned: they must not assume a live connection (fail with an error,
// which the dispatcher retries, or use the platform's HTTP API), and must
// not block on Run's state beyond ctx.
type Channel interface {
	// Name is the platform name used in config and session keys; it is
	// constant.
	Name() string
	// Run connects to the platform and delivers received messages to in
	// until ctx ends; it then returns nil. It reconnects by itself after
	// transient failures (through a Loop). It returns early only with an
	// error it cannot recover from: a FatalError stops the channel in
	// StateFailed until a reload; any other error makes the Manager restart
	// it with backoff.
	Run(ctx context.Context, in Inbox) error
	// Send delivers one message (already split to the platform's limit) and
	// returns a reference to it. It may block on network IO until ctx ends.
	Send(ctx context.Context, m bus.Outbound) (MessageRef, error)
}

// Inbox is where an adapter delivers what it receives. It is safe for
// concurrent use: an adapter may deliver from several goroutines.
type Inbox interface {
	// Deliver hands a message to the gateway. It returns nil once the
	// message is durably queued (or was a duplicate of one that is), and
	// only then may the adapter acknowledge the message to its platform.
	// It returns ErrDenied when access control rejected the sender: the
	// adapter acknowledges it (it is not retried). Any other error means
	// the message was not taken: the adapter must not acknowledge it (see
	// DeliverRetrying, and ReportLost for platforms that cannot deliver it
	// again). Deliver may block: while the queue is full
	// (back-pressure) and on disk IO, until ctx ends.
	Deliver(ctx context.Context, m bus.Inbound) error
}

// InboxFunc adapts a function to Inbox.
type InboxFunc func(ctx context.Context, m bus.Inbound) error

// Deliver calls f.
func (f InboxFunc) Deliver(ctx context.Context, m bus.Inbound) error { return f(ctx, m) }

// ErrUnavailable is returned (wrapped) by Deliver while the gateway cannot
// store messages: its disk is full or failing, or (cluster mode) NATS is
// unreachable. The adapter must not acknowledge the message;
// DeliverRetrying keeps trying until the gateway takes it or ctx ends.
var ErrUnavailable = errors.New("gateway cannot store messages right now")

// ErrDenied is returned by Deliver for a sender that is not allowed. The
// adapter should acknowledge the message (it is not retried).
var ErrDenied = errors.New("sender not allowed")

// MessageRef identifies a sent message for later edits.
type MessageRef struct {
	ChatID    string
	MessageID string
	// Extra carries platform details an edit needs (thread ts, ...).
	Extra map[string]string
}

// Admitter is an Inbox that can tell in advance whether it would admit a
// sender. Adapters ask before downloading attachments, so that strangers
// cannot fill the media folder or make the gateway fetch files for them.
type Admitter interface {
	Admits(channel, senderID string) bool
}

// Admits reports whether in would admit senderID on channel; inboxes that
// cannot tell are assumed to admit.
func Admits(in Inbox, channel, senderID string) bool {
	if a, ok := in.(Admitter); ok {
		return a.Admits(channel, senderID)
	}
	return true
}

// Editor is a channel that can edit a sent message in place, used to stream
// replies.
type Editor interface {
	// Edit replaces the text of a sent message.
	Edit(ctx context.Context, ref MessageRef, m bus.Outbound) error
	// EditInterval is the minimum time between two edits of one message.
	EditInterval() time.Duration
}

// Finisher is an Editor whose streamed messages have an end state of their
// own (a card that shows "generating…" until told otherwise). The
// Dispatcher calls Finish once a stream's last text is shown, also when
// that text needed no further edit; Finish on a message already finished
// does nothing.
type Finisher interface {
	Finish(ctx context.Context, ref MessageRef) error
}

// Drafter is an Editor that can show a stream in some chats as a draft
// instead of a message it edits: a preview the platform animates while the
// text grows, which is not a message and vanishes by itself after a while
// (Telegram's sendMessageDraft, private chats only).
//
// For a stream whose first delta DraftsTo accepts, the Dispatcher calls
// Draft with the text so far, at most once per EditInterval, and again
// with the same text when DraftRefresh passed without a change, so a slow
// answer keeps its preview. Text beyond the channel's limit goes out as a
// message, cut at a good point, and the draft goes on with the rest. The
// stream's end (finished, cut off, or gone quiet) is sent with Send, so
// the draft is never the only copy of what the user saw: a finished
// stream as whole messages with StreamID cleared, as they are never
// edited; a cut-off one with its StreamID, as the turn's next attempt
// after a restart edits it. When Draft fails, the stream goes on as a
// sent and edited message. Draft and DraftsTo are called like Send (one
// caller per chat); DraftsTo must not block.
type Drafter interface {
	Editor
	// DraftsTo reports whether the stream m belongs to is drafted.
	DraftsTo(m bus.Outbound) bool
	// Draft shows m.Content as the draft of stream m.StreamID in m's chat.
	Draft(ctx context.Context, m bus.Outbound) error
	// DraftRefresh is how long a draft may go unchanged before it is
	// shown again (well inside the time the platform keeps it).
	DraftRefresh() time.Duration
}

// StreamEnder is an Editor that wants each stream's end message (its full
// text, Final, Usage) even when the text needs no further edit: the
// OpenAI-compatible API ends its answer on it. The Dispatcher calls
// StreamEnded after the stream's last text is shown.
type StreamEnder interface {
	StreamEnded(ctx context.Context, ref MessageRef, m bus.Outbound)
}

// Assembler is a channel whose answer to a request is assembled from what
// it is sent (the OpenAI-compatible API): each stream's end reaches it
// whole, with its StreamID, whether or not it was shown, the agent's words
// between tool calls included whatever sendProgress says (they are part
// of the answer there).
type Assembler interface {
	AssemblesAnswers()
}

// Limiter is a channel with a message length limit (in characters).
type Limiter interface {
	MessageLimit() int
}

// Typer is a channel that can show a typing indicator.
type Typer interface {
	Typing(ctx context.Context, chatID string, meta bus.Metadata) error
}

// VoiceSender is a channel with voice messages (Telegram's sendVoice).
// SendVoice sends m.Media[0], Ogg/Opus audio, as one voice message; it
// blocks for the platform call. The dispatcher uses it for messages with
// Voice set.
type VoiceSender interface {
	SendVoice(ctx context.Context, m bus.Outbound) (MessageRef, error)
}

// CanSpeak reports whether c can deliver a spoken reply: as a voice
// message, or as an audio file through MediaSender.
func CanSpeak(c Channel) bool {
	if _, ok := c.(Voiceless); ok {
		return false
	}
	if _, ok := c.(VoiceSender); ok {
		return true
	}
	_, ok := c.(MediaSender)
	return ok
}

// Voiceless is a MediaSender that cannot deliver a spoken reply, not even
// as an audio file (QQ: voice only as SILK, other files not open to bots).
// CanSpeak is false for it, so no speech is made for its chats.
type Voiceless interface {
	Voiceless()
}

// MediaSender is a channel that can send files.
type MediaSender interface {
	SendMedia(ctx context.Context, m bus.Outbound) (MessageRef, error)
}

// LoginRunner is a channel that needs an interactive login (QR code,
// pairing code) before it can run: `nanobot channels login <name>`.
type LoginRunner interface {
	Login(ctx context.Context, prompt LoginPrompt) error
}

// LoginPrompt shows login steps to the user (a QR code as text, a code).
type LoginPrompt interface {
	Show(text string)
}

// HealthReporter is a channel that reports its connection state itself:
// every adapter does, by giving its Loop a HealthState and returning
// HealthState.Get here. While Run runs, the Manager shows this state
// (connecting, connected, reconnecting); channels without it count as
// connected while Run runs. Health is called concurrently with everything
// else and must not block.
type HealthReporter interface {
	Health() Health
}

// State of a channel.
type State string

const (
	// StateStarting: the Manager has not started the channel's Run yet.
	StateStarting State = "starting"
	// StateConnecting: Run is dialling and the platform has not confirmed
	// the connection yet (Telegram getMe, Slack hello, Discord READY).
	StateConnecting State = "connecting"
	// StateConnected: the platform confirmed the connection.
	StateConnected State = "connected"
	// StateReconnecting: the connection broke or an attempt failed
	// (LastError says why); the channel retries with backoff.
	StateReconnecting State = "reconnecting"
	// StateFailed: Run returned a FatalError (LastError is its reason);
	// the channel stays stopped until a reload (SIGHUP) or restart.
	StateFailed State = "failed"
	// StateStopped: the gateway is shutting down.
	StateStopped State = "stopped"
)

// States lists every State, in lifecycle order.
var States = []State{StateStarting, StateConnecting, StateConnected, StateReconnecting, StateFailed, StateStopped}

// Health is a channel's state and its last error.
type Health struct {
	State     State     `json:"state"`
	LastError string    `json:"lastError,omitempty"`
	Since     time.Time `json:"since"`
	Restarts  int       `json:"restarts"`
}

// RetryAfterError is an error carrying the platform's retry-after hint
// (HTTP 429); the dispatcher waits that long before retrying.
type RetryAfterError struct {
	After time.Duration
	Err   error
}

func (e *RetryAfterError) Error() string {
	return fmt.Sprintf("rate limited, retry after %s: %v", e.After, e.Err)
}

func (e *RetryAfterError) Unwrap() error { return e.Err }

// PermanentError marks a send error that retrying cannot fix (chat gone,
// bot blocked, message invalid).
type PermanentError struct{ Err error }

func (e *PermanentError) Error() string { return e.Err.Error() }
func (e *PermanentError) Unwrap() error { return e.Err }

// Permanentf is a PermanentError with a formatted message, as fmt.Errorf
// makes it (%w wraps).
func Permanentf(format string, args ...any) error {
	return &PermanentError{Err: fmt.Errorf(format, args...)}
}

// CheckSend is the PermanentError a Send gives for a message no platform
// can send: one without a chat id, or without text. platform prefixes the
// error ("discord: send: empty chat id"); nil means m may be sent.
func CheckSend(platform string, m bus.Outbound) error {
	if m.ChatID == "" {
		return Permanentf("%s: send: empty chat id", platform)
	}
	if strings.TrimSpace(m.Content) == "" {
		return Permanentf("%s: send to %s: empty message", platform, m.ChatID)
	}
	return nil
}
