// Package agent is the heart of nanobot: the Loop that drains inbound
// messages (one worker per session, sessions in parallel, a global cap on
// concurrent turns), the ContextBuilder that assembles the system prompt and
// the current user message, the Runner that alternates LLM calls and tool
// executions, slash commands, and sub-agents. It talks to LLMs only through
// providers.Provider and acts only through the tools registry.
//
// Concurrency: Submit, StopSession, Idle and WaitIdle may be called from any
// goroutine. A session's messages are handled by one worker goroutine at a
// time; its queue mode (queue.go) decides what a person's message does while
// that worker runs a turn: wait (queue), join the turn at its next model call
// (steer: the Runner asks between iterations), join the next turn after a
// pause (collect), or cancel the turn (interrupt). OnTurnDone is called once
// per message, from the worker, when the turn that answers it is over —
// also for a /stop and what it cancelled — and never under a lock: it may
// block (it does IO) without holding up Submit or another session.
//
// Sub-packages: session (conversation storage), memory (consolidation into
// MEMORY.md and HISTORY.md), skills (SKILL.md loader), templates (workspace
// files).
package agent
