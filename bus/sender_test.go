package bus

import "testing"

func TestSenderMatches(t *testing.T) {
	for _, tc := range []struct {
		entry, sender string
		want          bool
	}{
		{"123456789", "123456789", true},
		{"123456789", "123456789|alice", true},
		{"alice", "123456789|alice", true},
		{"@Alice", "123456789|alice", true},
		{"123456789|alice", "123456789|alice", true},
		{" alice ", "123456789|alice", true},
		{"12345678", "123456789|alice", false},
		{"ali", "123456789|alice", false},
		{"", "123456789|alice", false},
		{"@", "123456789|alice", false},
		{"alice", "", false},
		{"bob", "123456789|alice", false},
		{"123456789|bob", "123456789|alice", false},
	} {
		if got := SenderMatches(tc.entry, tc.sender); got != tc.want {
			t.Errorf("SenderMatches(%q, %q) = %v, want %v", tc.entry, tc.sender, got, tc.want)
		}
	}
}

func TestChannelSenderMatches(t *testing.T) {
	for _, tc := range []struct {
		entry, channel, sender string
		want                   bool
	}{
		{"telegram:123456789", "telegram", "123456789|alice", true},
		{"telegram:@alice", "telegram", "123456789|alice", true},
		{"telegram:123456789", "discord", "123456789|alice", false},
		{"123456789", "telegram", "123456789|alice", false},
		{"cli:user", "cli", "user", true},
		{"telegram:", "telegram", "123456789", false},
	} {
		if got := ChannelSenderMatches(tc.entry, tc.channel, tc.sender); got != tc.want {
			t.Errorf("ChannelSenderMatches(%q, %q, %q) = %v, want %v", tc.entry, tc.channel, tc.sender, got, tc.want)
		}
	}
}

// Session keys are written one way, whatever divides the chat.
func TestSessionKeyOf(t *testing.T) {
	for _, tc := range []struct {
		got, want string
	}{
		{SessionKeyOf("telegram", "42"), "telegram:42"},
		{SessionKeyOf("telegram", "-100888", "topic", "42"), "telegram:-100888:topic:42"},
		{SessionKeyOf("slack", "C1", "thread", "1700.1"), "slack:C1:thread:1700.1"},
		{Inbound{Channel: "web", ChatID: "c"}.Key(), "web:c"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
}
