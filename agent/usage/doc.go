// Package usage is the usage ledger: one Record per provider call (who,
// where, which model, how many tokens, what it cost, how long it took, how
// it ended), appended to a JSON-lines file per month under the instance
// folder, with running totals for the current day and month kept in
// memory so that a budget check costs a map lookup, and a query that
// filters by time and groups by day, model, channel, agent, sender or
// source (Summarize, Ledger.Summary).
//
// Budgets enforces daily and monthly token and cost caps (per sender,
// chat, agent and for everything) over those running totals: Reserve is
// asked before a provider call and holds the call's estimate until the
// call's record is appended and the reservation released, so concurrent
// calls cannot all slip under a cap together (see Budgets.Reserve for the
// bound).
//
// Files: <dir>/<YYYY-MM>.jsonl, or <dir>/<YYYY-MM>.<worker>.jsonl when the
// ledger is opened with a worker name (cluster mode: every worker writes
// its own part, and a query merges all parts of a month). Months are
// calendar months of the ledger's location.
//
// Durability: Append writes one line and returns once an fsync covers it,
// so a crash loses at most the calls in flight. Concurrent appends share
// one fsync (group commit). A torn last line (a crash in the
// middle of a write) is skipped by readers, and the next writer starts on
// a fresh line.
//
// Concurrency: a Ledger is safe for concurrent use. Appends are serialised
// by a mutex (no record is lost or written twice); Summary may run while
// appends go on and sees the complete lines written before it read them.
// Several processes must not share a worker name (their appends could
// interleave); they may share the folder. Budgets is safe for concurrent
// use; it takes its own lock before the ledger's, never the other way.
package usage
