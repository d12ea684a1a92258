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
// One Consolidator serves every session of a workspace and serializes all
// writes to the memory files; do not run two Consolidators on one workspace.
package memory
