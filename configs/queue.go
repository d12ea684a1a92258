package configs

// Queue modes: what happens to a message that arrives while its chat's turn
// is still running (docs/agents.md, "Queue modes").
const (
	// QueueFIFO runs each message as its own turn, in order.
	QueueFIFO = "queue"
	// QueueSteer injects the message into the running turn at its next
	// model call; a turn already giving its final answer takes it next.
	QueueSteer = "steer"
	// QueueCollect waits for a pause of CollectMs and answers everything
	// written until then in one turn.
	QueueCollect = "collect"
	// QueueInterrupt cancels the running turn and starts one that answers
	// everything still unanswered.
	QueueInterrupt = "interrupt"
)

// QueueModes lists the valid queue modes.
var QueueModes = []string{QueueFIFO, QueueSteer, QueueCollect, QueueInterrupt}

// ValidQueueMode reports whether s names a queue mode.
func ValidQueueMode(s string) bool {
	for _, m := range QueueModes {
		if s == m {
			return true
		}
	}
	return false
}

// QueueConfig is agents.defaults.queue: the queue mode of direct and group
// chats. A binding's queue and a chat's /queue choice win over it.
type QueueConfig struct {
	// Mode, when set, is the mode of every chat (DMMode and GroupMode are
	// then ignored).
	Mode string `json:"mode,omitempty"`
	// DMMode is the mode of direct chats (default "steer": one person
	// correcting themselves mid-answer wants the answer to change).
	DMMode string `json:"dmMode"`
	// GroupMode is the mode of group chats (default "collect": several
	// people writing short lines get one answer, not one per line).
	GroupMode string `json:"groupMode"`
	// CollectMs is the pause that ends a burst in collect mode, in
	// milliseconds (default 1500).
	CollectMs int `json:"collectMs"`
}

// DefaultQueue is the built-in queue configuration.
func DefaultQueue() QueueConfig {
	return QueueConfig{DMMode: QueueSteer, GroupMode: QueueCollect, CollectMs: 1500}
}

// For returns the configured mode of a direct (group false) or group chat.
func (q QueueConfig) For(group bool) string {
	switch {
	case q.Mode != "":
		return q.Mode
	case group && q.GroupMode != "":
		return q.GroupMode
	case !group && q.DMMode != "":
		return q.DMMode
	}
	return QueueFIFO
}

func (q QueueConfig) validate(v *validator, path string) {
	modes := append([]string{""}, QueueModes...)
	v.oneOf(path+".mode", q.Mode, modes...)
	v.oneOf(path+".dmMode", q.DMMode, modes...)
	v.oneOf(path+".groupMode", q.GroupMode, modes...)
	v.require(q.CollectMs >= 0 && q.CollectMs <= 60000, path+".collectMs", "want 0 to 60000 milliseconds, got %d", q.CollectMs)
}
