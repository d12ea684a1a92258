package providers

// FinishReasons maps a vendor's stop reasons to ours (FinishToolCalls,
// FinishLength, FinishContentFilter). Read-only after construction.
type FinishReasons map[string]string

// Of maps the vendor's reason r. A reason not in the table is FinishStop,
// unless the response holds tool calls: some servers say "stop" while
// returning calls, and the calls win.
func (m FinishReasons) Of(r string, hasToolCalls bool) string {
	if ours, ok := m[r]; ok {
		return ours
	}
	if hasToolCalls {
		return FinishToolCalls
	}
	return FinishStop
}
