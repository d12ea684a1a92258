// Package kit is the plumbing shared by adapters that speak their
// platform's protocol directly instead of through an SDK (DingTalk, WeCom,
// QQ, Feishu, WeChat ilink, Mochat): an access-token cache with
// single-flight refresh, a JSON-over-HTTP client that understands a
// platform's error envelope and keeps credentials out of its errors, a
// bounded message-id dedup cache, Waiters, which matches the answers a
// connection's reader receives to the calls waiting for them (OneBot,
// WeCom, Socket.IO acks, signal-cli JSON-RPC), and RenderQR for logins by
// scanning a QR code.
//
// The reconnect loop every adapter shares is channels.Loop; media downloads
// use channels/media; sleeping between retries uses channels.SleepBackoff.
//
// Concurrency: TokenCache, Dedup and Waiters are safe for concurrent use, and
// so is a Client once its fields are set. A TokenCache refreshes on a
// goroutine of its own, detached from its callers and bounded by 30 seconds,
// so a caller that gives up does not cancel the refresh for the others.
// Waiters.Deliver never blocks the reader that calls it.
package kit
