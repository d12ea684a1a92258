// Package kit is the plumbing shared by adapters that speak their
// platform's protocol directly instead of through an SDK (DingTalk, WeCom,
// QQ, Feishu, WeChat ilink, Mochat): an access-token cache with
// single-flight refresh, a JSON-over-HTTP client that understands a
// platform's error envelope and keeps credentials out of its errors, a
// bounded message-id dedup cache, a secret redactor, and Waiters, which
// matches the answers a connection's reader receives to the calls waiting
// for them (OneBot, WeCom, Socket.IO acks, signal-cli JSON-RPC).
//
// The reconnect loop every adapter shares is channels.Loop; media downloads
// use channels/media; sleeping between retries uses channels.SleepBackoff.
package kit
