package channels

// SenderAuthenticator is a channel that authenticates every message itself
// (the signed webhook channel: a shared secret per hook) and applies its own
// allow-lists before delivering. When AuthenticatesSenders reports true the
// gateway's Gate admits every sender on the channel, as it does for the
// OpenAI-compatible API whose key is the check, and the channel-level
// allowFrom is not consulted. It is called at start and on every reload and
// must not block.
type SenderAuthenticator interface {
	AuthenticatesSenders() bool
}

// AllowDefaulter is a Channel whose allow-list has a default other than
// "nobody" (the local web chat's is everyone who signed in): the gateway
// uses DefaultAllowFrom when the config sets no allowFrom for it, at start
// and on every reload. It must not block.
type AllowDefaulter interface {
	DefaultAllowFrom() []string
}
