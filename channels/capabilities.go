package channels

// Capabilities say which optional capabilities a channel has switched on
// for this run, where its config can turn one off (Feishu with streaming
// off is not edited in place). A channel that does not implement
// CapabilityReporter has every capability interface it implements.
type Capabilities struct {
	// Edit: messages are edited in place (streaming), if the channel is an
	// Editor.
	Edit bool
}

// CapabilityReporter is a channel whose capabilities depend on its config.
// Capabilities is called often (per message) and must not block.
type CapabilityReporter interface {
	Capabilities() Capabilities
}

// EditorOf returns c as an Editor when it is one and has editing on.
func EditorOf(c Channel) (Editor, bool) {
	e, ok := c.(Editor)
	if !ok {
		return nil, false
	}
	if r, ok := c.(CapabilityReporter); ok && !r.Capabilities().Edit {
		return nil, false
	}
	return e, true
}
