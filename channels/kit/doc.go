// Package kit is the plumbing shared by adapters that speak their
// platform's protocol directly instead of through an SDK (DingTalk, WeCom,
// QQ, Feishu, WeChat ilink, Mochat): a reconnect loop with backoff and
// health reporting, an access-token cache with single-flight refresh, a
// JSON-over-HTTP client that understands a platform's error envelope and
// keeps credentials out of its errors, a bounded message-id dedup cache and
// a secret redactor.
//
// Media downloads use channels/media; sleeping between retries uses
// channels.SleepBackoff.
package kit
