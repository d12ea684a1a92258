package hooks

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/nanobot-go/nanobot/tools/sandbox"
)

// program is a hook run as an external program: the request on stdin,
// the answer on stdout. It runs like exec's commands: in the workspace,
// confined by the sandbox mode, with the minimal environment (never the
// gateway's keys); when its deadline passes, its process group is killed.
type program struct {
	argv []string
	dir  string
	mode sandbox.Mode
}

func (p *program) call(ctx context.Context, body []byte) ([]byte, error) {
	stdout := &capped{max: MaxResponse}
	stderr := &capped{max: 4 << 10}
	var writable []string
	if p.dir != "" {
		writable = []string{p.dir}
	}
	cmd, err := sandbox.Command(ctx, sandbox.Spec{
		Path: p.argv[0], Args: p.argv[1:], Dir: p.dir,
		Env:   sandbox.BaseEnv(""),
		Stdin: bytes.NewReader(body), Stdout: stdout, Stderr: stderr,
		Mode: p.mode, Writable: writable, Readable: programDirs(p.argv), WaitDelay: time.Second,
	})
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", p.argv[0], err)
	}
	runErr := cmd.Run()
	if errors.Is(runErr, exec.ErrWaitDelay) {
		_ = sandbox.KillGroup(cmd) // something it started still holds stdout
		runErr = nil
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("%s killed: %w", p.argv[0], err)
	}
	if runErr != nil {
		return nil, fmt.Errorf("%s: %w%s", p.argv[0], runErr, stderrTail(stderr))
	}
	if stdout.over {
		return nil, fmt.Errorf("%s: answered more than %d bytes", p.argv[0], MaxResponse)
	}
	return stdout.buf.Bytes(), nil
}

// programDirs are the folders of the files the command line names by
// absolute path (the program, or the script an interpreter runs): the
// owner put the hook there, so the sandbox lets it read them.
func programDirs(argv []string) []string {
	var dirs []string
	for _, a := range argv {
		if !filepath.IsAbs(a) {
			continue
		}
		if fi, err := os.Stat(a); err == nil && fi.Mode().IsRegular() && !slices.Contains(dirs, filepath.Dir(a)) {
			dirs = append(dirs, filepath.Dir(a))
		}
	}
	return dirs
}

func stderrTail(c *capped) string {
	s := strings.TrimSpace(c.buf.String())
	if s == "" {
		return ""
	}
	return " (stderr: " + s + ")"
}

// capped keeps the first max bytes written and notes that there was more.
type capped struct {
	buf  bytes.Buffer
	max  int
	over bool
}

func (c *capped) Write(b []byte) (int, error) {
	if room := c.max - c.buf.Len(); len(b) > room {
		c.buf.Write(b[:max(room, 0)])
		c.over = true
		return len(b), nil
	}
	return c.buf.Write(b)
}
