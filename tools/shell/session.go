package shell

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/nanobot-go/nanobot/tools/sandbox"
)

// drainGrace is how long a session's output is still read after its
// command exited and its process group was killed: what a descendant that
// left the group still writes to the terminal is not waited for longer.
const drainGrace = 2 * time.Second

// writeTimeout bounds one write to a session's terminal: a program that
// does not read its input fills the terminal's buffer.
const writeTimeout = 5 * time.Second

// session is one command running in a pseudo-terminal. Two goroutines
// serve it from the start: read copies the terminal's output into out,
// and wait reaps the command, kills what it left in its process group,
// lets read finish and closes done. kill ends it early (cancel reaches
// sandbox.KillGroup through the command's context).
type session struct {
	id, owner, command, dir string
	started, deadline       time.Time

	cmd    *exec.Cmd
	master *os.File
	cancel context.CancelFunc

	// calls serialises the tool calls on this session, so two polls never
	// split one output between them, and a write is classified, asked
	// about, typed and recorded in pending before the next is looked at.
	calls sync.Mutex
	// pending is what was typed in and not run yet; guarded by calls.
	pending typing

	mu        sync.Mutex
	out       *outputBuffer
	changed   chan struct{} // closed (and replaced) when output arrives
	lastUse   time.Time
	endReason string // why the gateway killed it; "" while it has not

	readDone chan struct{}
	done     chan struct{} // closed once reaped and read to the end
	exit     string        // "Exit code: N" or "Exit: signal: killed"; set before done closes
}

// newSession starts cmd (prepared by sandbox.Command with a context that
// cancel ends) in a pseudo-terminal.
func newSession(cmd *exec.Cmd, cancel context.CancelFunc, s *session, bufferChars int, onEnd func(*session)) error {
	master, err := startInPTY(cmd)
	if err != nil {
		cancel()
		return err
	}
	s.cmd, s.master, s.cancel = cmd, master, cancel
	s.out = newOutputBuffer(bufferChars)
	s.changed = make(chan struct{})
	s.readDone = make(chan struct{})
	s.done = make(chan struct{})
	go s.read()
	go s.wait(onEnd)
	return nil
}

func (s *session) read() {
	defer close(s.readDone)
	var text terminalText
	buf := make([]byte, 32<<10)
	for {
		n, err := s.master.Read(buf)
		if n > 0 {
			s.append(text.write(buf[:n]))
		}
		if err != nil {
			// EIO once no process holds the terminal any more, ErrClosed
			// after wait gave up on a straggler.
			s.append(text.flush())
			return
		}
	}
}

func (s *session) append(text string) {
	if text == "" {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.out.write(text)
	close(s.changed)
	s.changed = make(chan struct{})
}

func (s *session) wait(onEnd func(*session)) {
	_ = s.cmd.Wait()
	// Background jobs the command left behind in its session's process
	// group end with it, as exec's do.
	_ = sandbox.KillGroup(s.cmd)
	s.cancel()
	grace := time.NewTimer(drainGrace)
	select {
	case <-s.readDone:
	case <-grace.C:
	}
	grace.Stop()
	s.master.Close()
	<-s.readDone
	s.exit = "Exit code: 0"
	if ps := s.cmd.ProcessState; ps != nil {
		if code := ps.ExitCode(); code >= 0 {
			s.exit = fmt.Sprintf("Exit code: %d", code)
		} else {
			s.exit = "Exit: " + ps.String()
		}
	}
	close(s.done)
	onEnd(s)
}

// exited reports whether the command has ended and its output is read.
func (s *session) exited() bool {
	select {
	case <-s.done:
		return true
	default:
		return false
	}
}

// kill ends the command and everything in its process group. why, when
// the gateway (not the model) ends it, is told to the model on the next
// poll. It does not wait: done closes when the processes are gone. It
// reports whether why was recorded (the first reason given wins).
func (s *session) kill(why string) bool {
	s.mu.Lock()
	first := why != "" && s.endReason == "" && !s.exited()
	if first {
		s.endReason = why
	}
	s.mu.Unlock()
	s.cancel()
	return first
}

// touch records a tool call on the session: idleness counts from here.
func (s *session) touch(now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if now.After(s.lastUse) {
		s.lastUse = now
	}
}

func (s *session) idleSince() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lastUse
}

// errStdinClosed is returned when the session cannot take input any more.
var errStdinClosed = errors.New("the session has already exited; its input is closed")

// write types chars into the terminal and returns how many bytes it took.
func (s *session) write(chars string) (int, error) {
	if s.exited() {
		return 0, errStdinClosed
	}
	if err := s.master.SetWriteDeadline(time.Now().Add(writeTimeout)); err != nil {
		return 0, fmt.Errorf("write to the session: %w", err)
	}
	// Once the terminal took the text, it was typed, even if the program
	// has ended since (it may have read it and exited at once).
	n, err := io.WriteString(s.master, chars)
	switch {
	case err == nil:
		return n, nil
	case errors.Is(err, os.ErrDeadlineExceeded):
		return n, fmt.Errorf("the program did not read its input for %s (the terminal's buffer is full); poll its output or terminate it", writeTimeout)
	case errors.Is(err, os.ErrClosed), s.exited():
		return n, errStdinClosed
	default:
		return n, fmt.Errorf("write to the session: %w", err)
	}
}

// poll is what one look at a session saw.
type poll struct {
	output    string
	done      bool
	exit      string
	endReason string
}

// poll waits up to wait for the command to end (or, with waitFor, for
// that text to appear in the unread output), then takes the unread
// output. ctx ending (the turn cancelled) stops the wait, not the command.
func (s *session) poll(ctx context.Context, wait time.Duration, waitFor string) poll {
	if wait > 0 {
		timer := time.NewTimer(wait)
		defer timer.Stop()
	waiting:
		for {
			s.mu.Lock()
			changed := s.changed
			seen := waitFor != "" && strings.Contains(s.out.text(), waitFor)
			s.mu.Unlock()
			if seen {
				break
			}
			if waitFor == "" {
				changed = nil // only the end or the time ends the wait
			}
			select {
			case <-changed:
			case <-s.done:
				break waiting
			case <-timer.C:
				break waiting
			case <-ctx.Done():
				break waiting
			}
		}
	}
	done := s.exited()
	s.mu.Lock()
	defer s.mu.Unlock()
	p := poll{output: s.out.drain(), done: done, endReason: s.endReason}
	if done {
		p.exit = s.exit
	}
	return p
}
