// Package wire is the plumbing the lean vendor clients (providers/openai,
// providers/anthropic) share: a JSON POST that turns a non-2xx answer into
// a *StatusError, request encoding with the configured extra body, lenient
// response decoding, a server-sent-events reader, and the classification
// of what fails into a *providers.Error.
//
// Functions are safe for concurrent use; an SSEReader belongs to one
// goroutine, and the data it returns is valid until its next Next.
package wire
