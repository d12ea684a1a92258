// Package channels is the kit every chat-platform adapter is built from,
// and nothing else: the Channel interface, the optional capability
// interfaces (Editor, Drafter, Typer, MediaSender, VoiceSender, LoginRunner,
// HealthReporter, WebhookHandler, Noticer, SenderAuthenticator,
// AllowDefaulter) detected by type assertion and switched per run by
// CapabilityReporter, the typed errors (PermanentError, RetryAfterError,
// ErrDenied, FatalError), Loop (reconnect with backoff and jitter, health),
// DeliverRetrying and ReportLost (handing a message to the gateway), and the
// registry cmd fills with the built-in adapters.
//
// Adapters live in one sub-package per platform (channels/telegram, ...)
// and import only this kit, its sub-packages (kit, media, markdown), bus
// and configs; channels/channeltest is the conformance suite they all
// pass. The runtime that runs them (supervision, access control, the
// outbound dispatcher) is the gateway's: gateway/relay.
//
// Concurrency: a Channel's Send, Edit and Typing are called concurrently
// with Run, one caller per chat at a time; Loop and the helpers here are
// safe for concurrent use.
package channels
