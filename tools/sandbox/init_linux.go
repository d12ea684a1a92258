package sandbox

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

// runInit is the helper as PID 1 of the sandbox's PID namespace. It starts
// a second stage of itself (p.Stage2: capabilities, limits, Landlock, exec
// of the command) and then does what an init does: it forwards signals to
// it, reaps every orphan reparented to it (so zombies of a long-running
// MCP server's grandchildren do not pile up against the process limit),
// and exits with the command's status once the command ends, which ends
// everything else in the namespace too. This loop is not confined by
// Landlock, but it runs nothing but the second stage. A command killed by
// signal n ends the helper with status 128+n, as in a shell.
func runInit(p policy, argv []string) error {
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("init: %w", err)
	}
	p.Stage2 = true
	files := []*os.File{os.Stdin, os.Stdout, os.Stderr}
	var wall *os.File
	if p.WallFD > 0 {
		wall = os.NewFile(uintptr(p.WallFD), "landlock-port-wall")
		files = append(files, wall)
		p.WallFD = len(files) - 1
	}
	args := append([]string{HelperName, p.encode(), "--"}, argv...)
	proc, err := os.StartProcess(self, args, &os.ProcAttr{Env: os.Environ(), Files: files})
	if wall != nil {
		// The second stage enforces the port wall with its own copy; this
		// stage does not keep the shared ruleset.
		wall.Close()
	}
	if err != nil {
		return fmt.Errorf("init: start: %w", err)
	}
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGWINCH)
	go func() {
		for s := range sigs {
			_ = proc.Signal(s)
		}
	}()
	for {
		var st syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &st, 0, nil)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return fmt.Errorf("init: wait: %w", err)
		}
		if pid != proc.Pid {
			continue // an orphan, reaped
		}
		// syscall.Exit, not os.Exit: nothing to flush, and a race-enabled
		// build (tests) would otherwise linger a second at exit.
		switch {
		case st.Exited():
			syscall.Exit(st.ExitStatus())
		case st.Signaled():
			syscall.Exit(128 + int(st.Signal()))
		}
	}
}
