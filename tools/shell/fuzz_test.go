package shell

import (
	"fmt"
	"path/filepath"
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
