package bus

import "testing"

func TestCommandUsage(t *testing.T) {
	for _, tt := range []struct {
		cmd   Command
		usage string
		admin bool
	}{
		{Command{Name: "new", Help: "start over"}, "/new", false},
		{Command{Name: "model", Help: "switch", Args: []CommandArg{{Name: "preset"}}}, "/model [preset]", false},
		{Command{Name: "dream-restore", Help: "put it back (admins)", Args: []CommandArg{{Name: "version", Required: true}}}, "/dream-restore <version>", true},
		{Command{Name: "voice", Help: "speak", Args: []CommandArg{{Name: "mode", Choices: []string{"on", "off"}}}}, "/voice [on|off]", false},
		{Command{Name: "queue", Help: "modes", Args: []CommandArg{{Name: "mode", Choices: []string{"a", "b", "c", "d", "e"}}}}, "/queue [mode]", false},
	} {
		if got := tt.cmd.Usage(); got != tt.usage {
			t.Errorf("%s: Usage = %q, want %q", tt.cmd.Name, got, tt.usage)
		}
		if got := tt.cmd.AdminOnly(); got != tt.admin {
			t.Errorf("%s: AdminOnly = %v, want %v", tt.cmd.Name, got, tt.admin)
		}
	}
}
