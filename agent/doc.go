// Package agent is the heart of nanobot: the Loop that drains inbound
// messages (one worker per session, sessions in parallel, a global cap on
// concurrent turns), the ContextBuilder that assembles the system prompt and
// the current user message, the Runner that alternates LLM calls and tool
// executions, slash commands, and sub-agents. It talks to LLMs only through
// providers.Provider and acts only through the tools registry.
//
// Sub-packages: session (conversation storage), memory (consolidation into
// MEMORY.md and HISTORY.md), skills (SKILL.md loader), templates (workspace
// files).
package agent
