// Package web holds the web tools: web_search (Brave, Tavily, SearXNG,
// Jina, Kagi, Olostep, Bocha, Volcengine, Keenable, Serper, or
// key-less DuckDuckGo, which is also the fallback when a keyed backend has
// no key) and web_fetch (a page as readable Markdown, JSON and text as
// they are, images as image parts).
//
// Everything fetched is external content: it is wrapped in an
// <external_content> marker preceded by a note telling the model to treat
// it as data, never as instructions. web_fetch goes through SSRFGuard
// (ssrf.go), which refuses every destination that is not the public
// internet (loopback, private, link-local and metadata, CGNAT, multicast,
// every IPv4 spelling, IPv4-in-IPv6 forms) unless allowlisted, pins each
// connection to the address it checked and re-checks every redirect.
// Search backends are configured endpoints and may be on the LAN.
//
// The tools are safe for concurrent use.
package web

import (
	"github.com/nanobot-go/nanobot/internal/untrusted"
)

// UntrustedNote precedes every piece of external content.
const UntrustedNote = untrusted.Note

// defaultUserAgent identifies the fetcher; some sites refuse Go's default.
const defaultUserAgent = "Mozilla/5.0 (compatible; nanobot/1.0; +https://github.com/nanobot-go/nanobot)"

// wrapExternal marks text as untrusted (see untrusted.Wrap).
func wrapExternal(source, text string) string { return untrusted.Wrap(source, text) }
