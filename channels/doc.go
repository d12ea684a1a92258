// Package channels owns the chat-platform side of the gateway: the Channel
// interface every platform adapter implements, the optional capability
// interfaces (Editor, Typer, MediaSender, LoginRunner, HealthReporter,
// WebhookHandler, Noticer) detected by type assertion and switched per run
// by CapabilityReporter, the registry cmd fills with the
// built-in adapters, the Manager that supervises one goroutine per enabled
// channel, access control (allow-lists and pairing) and the outbound
// dispatcher (retries, delta merging, splitting to platform limits).
//
// Adapters live in one sub-package per platform (channels/telegram, ...);
// channels/channeltest is the conformance suite they all pass. Channels never
// import the agent.
package channels
