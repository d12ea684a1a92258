package relay

import (
	"time"

	"github.com/nanobot-go/nanobot/channels"
)

// DeliveryLog is a durable outbox the Dispatcher reports to. Messages that
// carry an ID (bus.Outbound.ID) while DispatcherConfig.Delivery is set are
// durable: they are retried for as long as MaxAge allows (a channel that is
// down or reconnecting delays them, in order, but does not lose them), each
// part is recorded once the platform accepted it, parts recorded in an
// earlier run are skipped, and every part carries a stable IdempotencyKey.
//
// The methods are called from the chat workers, concurrently for different
// chats; they may block on disk IO.
type DeliveryLog interface {
	// Queued returns when message id was recorded; its age bounds retries.
	Queued(id string) time.Time
	// SentParts returns the parts of message id the platform accepted
	// already, by index.
	SentParts(id string) map[int]channels.MessageRef
	// PartSent records that the platform accepted part i of message id.
	PartSent(id string, part int, ref channels.MessageRef) error
	// Finished records that message id needs no more delivery.
	Finished(id string, outcome Outcome)
	// StreamMessage returns the platform message an unfinished stream of
	// turn shows (in this run or before a crash).
	StreamMessage(turn string) (channels.MessageRef, bool)
	// StreamStarted records the first platform message of a stream of turn.
	StreamStarted(turn string, ref channels.MessageRef)
}

// Outcome is how the delivery of a durable message ended.
type Outcome string

const (
	// OutcomeSent: the platform accepted every part.
	OutcomeSent Outcome = "sent"
	// OutcomeSkipped: nothing to send (empty, or progress not wanted).
	OutcomeSkipped Outcome = "skipped"
	// OutcomeRefused: the platform refused it for good (PermanentError).
	OutcomeRefused Outcome = "refused"
	// OutcomeExpired: still failing when it was older than MaxAge.
	OutcomeExpired Outcome = "expired"
)

// DefaultMaxAge bounds how long a durable message is retried.
const DefaultMaxAge = 24 * time.Hour

// DefaultRetryMax caps the wait between two tries of a durable message.
const DefaultRetryMax = 2 * time.Minute
