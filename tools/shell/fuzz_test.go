package shell

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/tools/internal/pathguard"
)

// FuzzGuards: the lexer and both guards accept any command line without
// panicking.
func FuzzGuards(f *testing.F) {
	for _, s := range []string{
		"rm -rf /", "echo 'a\"b' \"c'd\" \\\n e", "cat <<EOF\nx\nEOF\nls", "a $(b `c` (d)) e", "x 2>&1 >&2 &>/dev/null <<< y",
		":(){ :|:& };:", "sudo -u", "env A=1", "bash -c", "cd", "'unterminated", "\"unterminated", "$(", "`", "a\\",
	} {
		f.Add(s)
	}
	ws, err := filepath.EvalSymlinks(f.TempDir())
	if err != nil {
		f.Fatal(err)
	}
	paths, err := pathguard.New(ws, true)
	if err != nil {
		f.Fatal(err)
	}
	g, err := newGuard([]string{`\bcurl\b`}, []string{`^ok$`})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, line string) {
		timer := time.AfterFunc(10*time.Second, func() { panic(fmt.Sprintf("slow input (%d bytes): %q", len(line), line)) })
		defer timer.Stop()
		cmds := parse(line)
		_ = g.check(line, cmds)
		_ = confine(paths, ws, cmds)
	})
}

// FuzzTypedKeys: any keys, typed in two writes, leave a state whose text
// ends where the line being edited can start, and are classified without
// panicking.
func FuzzTypedKeys(f *testing.F) {
	for _, s := range []string{
		"cu\x00rl x\n", "echo 'a\n\x00'; curl x\n", "cat <<-EOF\n\tx\n\tEOF\n", "\x16\x15\x7f\b\x03\x04\r", "$'\\'\n\x00`$(${\n",
		"a |\n\x00&&\n", "é\x7f\x1b[A\t\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, keys string) {
		timer := time.AfterFunc(10*time.Second, func() { panic(fmt.Sprintf("slow input (%d bytes): %q", len(keys), keys)) })
		defer timer.Stop()
		first, second, _ := strings.Cut(keys, "\x00")
		st, _ := typing{}.typeKeys(first)
		st, got := st.typeKeys(second)
		if st.lineAt > len(st.text) || !strings.HasSuffix(got.run, st.text) {
			t.Fatalf("state %+v after %q, run %q", st, keys, got.run)
		}
		_ = typedRisks(got.run, "/ws", "/ws")
		_ = shown(got.run)
	})
}
