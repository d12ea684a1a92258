package shell

import (
	"slices"
	"strings"
	"testing"
)

// asked is what the approval gate in mode risky would ask about the keys:
// the reasons, or nil when nothing is classified.
func asked(keys typed, ws string) []string {
	if keys.run == "" {
		return nil
	}
	out := typedRisks(keys.run, ws, ws)
	if keys.unsure {
		out = append(out, riskKeys)
	}
	slices.Sort(out)
	return out
}

func TestTypedKeysAreReadAsTheShellAssemblesThem(t *testing.T) {
	const ws = "/home/u/ws"
	for _, tc := range []struct {
		name   string
		chunks []string
		want   []string // per chunk: the reasons asked, comma-separated; "" for none
		held   string   // the command still being typed at the end
	}{
		// Split across writes.
		{"a risky line in two pieces", []string{"cu", "rl -s http://x\n"}, []string{"", riskNetwork}, ""},
		{"a harmless line in two pieces", []string{"l", "s -la\n"}, []string{"", ""}, ""},
		{"a risky tail is asked once", []string{"curl x", "\n"}, []string{riskNetwork, ""}, ""},
		{"what follows the carried Enter is read", []string{"curl x", "\nls\n"}, []string{riskNetwork, ""}, ""},
		{"more typed after a risky tail asks again", []string{"curl x", " -s\n"}, []string{riskNetwork, riskNetwork}, ""},
		{"Enter as \\r", []string{"wg", "et x\r"}, []string{"", riskNetwork}, ""},
		// Editing keys.
		{"Ctrl-U kills the line", []string{"curl x\x15ls\n"}, []string{""}, ""},
		{"Ctrl-C drops the line", []string{"curl x\x03", "ls\n"}, []string{"", ""}, ""},
		{"backspace joins a word", []string{"curlx\x7f x\n"}, []string{riskNetwork}, ""},
		{"\\b erases too", []string{"curlx\b x\n"}, []string{riskNetwork}, ""},
		{"backspace across writes", []string{"curlx", "\x7f x\n"}, []string{"", riskNetwork}, ""},
		{"backspace stops where the shell has read", []string{"echo 'a\n", "\x7f\x7f\x7f'; curl x\n"}, []string{"", riskNetwork}, ""},
		{"Ctrl-U stops where the shell has read", []string{"echo 'a\n", "zz\x15'; curl x\n"}, []string{"", riskNetwork}, ""},
		// A command over several lines.
		{"a quote open across lines", []string{"echo 'a\n", "'; curl x\n"}, []string{"", riskNetwork}, ""},
		{"an ANSI-C quote open across lines", []string{"echo $'it\\'s\n", "'; curl x\n"}, []string{"", riskNetwork}, ""},
		{"a quote misread as open", []string{"echo don't\n", "curl x\n"}, []string{"", riskNetwork}, "echo don't\ncurl x\n"},
		{"a comment's quote is not open", []string{"echo a # it's\n", "ls\n"}, []string{"", ""}, ""},
		{"a backslash continues the line", []string{"cu\\\n", "rl x\n"}, []string{"", riskNetwork}, ""},
		{"a pipe continues the command", []string{"cat f |\n", "sh\n"}, []string{"", riskPipeShell}, ""},
		{"&& continues the command", []string{"true &&\n", "\n", "wget x\n"}, []string{"", "", riskNetwork}, ""},
		{"a here-document's body is data", []string{"cat > notes <<'EOF'\n", "it's fine\n", "EOF\n", "ls\n"}, []string{"", "", "", ""}, ""},
		{"a here-document in one write", []string{"cat > notes <<EOF\nit's fine\nEOF\nls\n"}, []string{""}, ""},
		{"a here-document fed to a shell", []string{"sh <<EOF\n", "curl x\n", "EOF\n"}, []string{"", riskNetwork, riskNetwork}, ""},
		// Keys the model does not follow.
		{"Tab completes", []string{"cur\t x\n"}, []string{riskKeys}, ""},
		{"an arrow key recalls history", []string{"\x1b[A\n"}, []string{riskKeys}, ""},
		{"non-ASCII may be Meta keys", []string{"echo é\n"}, []string{riskKeys}, ""},
		{"a non-ASCII character erased", []string{"curlé\x7f\x7f"}, []string{riskKeys + "," + riskNetwork}, "curl"},
		{"unsure until Enter", []string{"ls\t", "\n", "ls\n"}, []string{riskKeys, riskKeys, ""}, ""},
		{"Ctrl-C ends unsure", []string{"\x1b", "\x03", "ls\n"}, []string{riskKeys, "", ""}, ""},
		{"Ctrl-V quotes the next key", []string{"\x16", "\x15ls\n"}, []string{"", riskKeys}, ""},
		{"Ctrl-D on a typed line", []string{"ls\x04"}, []string{riskKeys}, "ls"},
		{"Ctrl-D on an empty line", []string{"\x04"}, []string{""}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var st typing
			for i, chunk := range tc.chunks {
				next, keys := st.typeKeys(chunk)
				var want []string
				if tc.want[i] != "" {
					want = strings.Split(tc.want[i], ",")
				}
				slices.Sort(want)
				if got := asked(keys, ws); !slices.Equal(got, want) {
					t.Errorf("typing %q after %q (read as %q): asked %q, want %q", chunk, st.text, keys.run, got, want)
				}
				st = next
			}
			if st.text != tc.held {
				t.Errorf("held %q, want %q", st.text, tc.held)
			}
		})
	}
}

// A write the terminal took only part of leaves a line nobody classified
// as it stands: Enter alone must not run it unasked.
func TestTypedLineNotClassifiedIsReadAgain(t *testing.T) {
	st, _ := typing{}.typeKeys("curl x")
	st.unread = true
	if _, keys := st.typeKeys("\n"); keys.run != "curl x\n" {
		t.Errorf("Enter after a partial write reads %q, want the whole line", keys.run)
	}
	st.unread = false
	if _, keys := st.typeKeys("\n"); keys.run != "" {
		t.Errorf("Enter after a classified line reads %q, want nothing new", keys.run)
	}
}

func TestTypedTextAsShown(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"curl x\n", "curl x"},
		{"\n\n", "(Enter)"},
		{"ls\ncurl x", "ls\ncurl x"},
		{"a\x1b[Ab\tc\n", `a\x1b[Ab\x09c`},
		{"echo é", "echo é"},
		{"x\xffy", `x\xffy`},
	} {
		if got := shown(tc.in); got != tc.want {
			t.Errorf("shown(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
