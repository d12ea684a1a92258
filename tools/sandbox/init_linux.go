package sandbox

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

// runInit is the helper as PID 1 of the sandbox's PID namespace. It starts
// a second helper (stage 2: Landlock, limits, exec of the program) and then
// does what an init does: forwards signals to it, reaps every orphan that
// is reparented to it (so zombies of a long-running MCP server's
// grandchildren do not pile up against the process limit), and exits with
// the program's status once the program ends, which ends everything else
// in the namespace too. Only the program is confined by Landlock and the
// resource limits; this small loop is not, and runs nothing else.
func runInit(c helperConfig) error {
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("init: %w", err)
	}
	args := append([]string{self, HelperCommand, "--stage2"}, c.raw...)
	proc, err := os.StartProcess(self, args, &os.ProcAttr{
		Env:   os.Environ(), // keeps the helper marker for stage 2
		Files: []*os.File{os.Stdin, os.Stdout, os.Stderr},
	})
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
		switch {
		case st.Exited():
			os.Exit(st.ExitStatus())
		case st.Signaled():
			os.Exit(128 + int(st.Signal()))
		}
	}
}
