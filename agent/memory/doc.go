// Package memory owns the agent's long-term memory in the workspace:
// memory/MEMORY.md (facts about the user and ongoing work, rewritten by
// consolidation and injected into every system prompt) and
// memory/HISTORY.md (an append-only timeline of "[YYYY-MM-DD HH:MM] summary"
// paragraphs, never in the prompt; the agent greps it).
//
// A Consolidator keeps prompts inside the model's context window: before a
// turn it estimates the next prompt, and when the estimate passes the budget
// it asks the model (a forced save_memory tool call) to fold the oldest
// unconsolidated messages into MEMORY.md and a HISTORY.md entry, then moves
// the session's cursor past them. Session files stay append-only; only the
// cursor moves. When the model keeps failing, the raw messages are archived
// into HISTORY.md instead, so nothing is lost and no turn blocks for long.
//
// Concurrency: one Consolidator serves every session of a workspace and is
// safe for concurrent use; a lock (waiting on ctx) serializes every
// read-modify-write of the memory files across sessions. Calls for one
// session must not run concurrently with writes to that session (the
// agent's per-session worker sees to it). Consolidators in several
// processes on one workspace (cluster workers on a shared volume) must
// share an Options.Lock; without one, run a single Consolidator.
package memory
