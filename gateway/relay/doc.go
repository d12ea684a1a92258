// Package relay is the channel runtime only the gateway uses: the Manager
// that supervises one goroutine per enabled channel (restarts with backoff,
// health, stop on fatal errors), the Gate that admits inbound messages
// (allow-lists, admins, pairing and its PairingStore), and the Dispatcher
// that delivers outbound ones (one worker per chat, retries and
// Retry-After, delta merging and streaming edits, splitting to platform
// limits, the durable outbox's DeliveryLog).
//
// Adapters never import it: they see only the kit in package channels.
//
// Concurrency: Manager, Gate, Dispatcher and PairingStore are safe for
// concurrent use. The Dispatcher keeps each chat's messages in order and
// never lets one slow chat hold another; the callbacks it is given
// (SendObserver, DeliveryLog) are called from chat workers, concurrently.
package relay
