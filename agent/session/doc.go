// Package session owns conversation storage: the Session (one conversation,
// keyed "channel:chat_id" by default), the legal-history view the agent sends
// to the model (History), and the Store that persists sessions.
//
// # Usage
//
// The agent loop, once per inbound message:
//
//	s, err := store.Load(ctx, key)        // get or create; a new session has no file yet
//	history := s.History(0)               // legal sequence for the provider, copied
//	... run the turn ...
//	err = store.Append(ctx, s, turn...)   // writes only the new lines
//	err = store.SetCursor(ctx, s, n)      // after memory consolidation
//	err = store.Archive(ctx, s)           // /new: old file kept aside, s starts empty
//
// Store.Rewrite replaces a whole history atomically (repairs, trims); normal
// turns never need it.
//
// # Concurrency
//
// Stores are safe for concurrent use: operations on different keys run in
// parallel, operations on one key are serialized. A store never hands out
// two live *Session values for one key: a session evicted from the cache but
// still held by a caller is returned again by Load. A *Session changes only
// through the store that loaded it. History and Len may be called at any
// time; reading the exported fields directly is for the goroutine that owns
// the session (the agent loop's per-session worker) and must not overlap a
// store call on the same session in another goroutine.
//
// # Prompt caches
//
// Stored history is append-only, and History is a pure function of the
// session, so the prompt prefix built from it stays byte-identical between
// turns until the window limit cuts or consolidation moves the cursor.
//
// # Files
//
// FileStore keeps one JSONL file per session; see FileStore for the layout,
// which is the one the Python nanobot writes.
package session
