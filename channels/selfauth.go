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
