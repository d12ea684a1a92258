// Package gateway is the long-running daemon behind `nanobot gateway`. Its
// Run assembles the bus, the channel manager, the agent loop, the outbound
// dispatcher, cron, heartbeat and the HTTP server (health, metrics, web
// chat), starts them in order, and stops them in reverse when its context
// ends. Sub-packages hold its parts: the channel runtime (relay), the
// durable inbox and outbox (journal, outbox), the bus on NATS for cluster
// mode (natsbus), cron, heartbeat, the OpenAI-compatible API (api), the
// workbench (webui) and logging; the in-process bus is the top-level
// package bus.
//
// Concurrency: New and Run are called once, from one goroutine. Run starts
// each service on a goroutine of its own and returns only after it stopped
// them all, in reverse order; reloads (Options.Reload) are applied on Run's
// goroutine. Status and the HTTP handlers may be called from any goroutine
// once New has returned, and an Early's methods are safe for concurrent
// use.
package gateway
