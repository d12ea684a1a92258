package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/nanobot-go/nanobot/gateway"
	"github.com/spf13/cobra"
)

// Service controls with nanobot's names: `nanobot gateway --background`
// starts the gateway detached, its output in logs/gateway.log; `nanobot
// gateway status|stop|restart|logs` find it through state/gateway.pid
// (the gateway writes it whichever way it was started: in a terminal,
// in the background or by systemd).

// gatewayLogName is the log file of a gateway started with --background.
const gatewayLogName = "gateway.log"

// startTimeout is how long --background waits for the gateway to answer.
const startTimeout = 20 * time.Second

// startBackground starts this same command again, detached, without
// --background, and returns once the gateway answers /healthz (or with
// the end of its log when it exits first).
func startBackground(cmd *cobra.Command, a *app) error {
	l := a.loaded
	node := l.Config.Cluster.Role == gateway.RoleChannels || l.Config.Cluster.Role == gateway.RoleWorker
	if pid, alive := readPid(l.Paths.State); alive && !node {
		return fmt.Errorf("a gateway already runs on this instance (pid %d)", pid)
	}
	bin, err := os.Executable()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(l.Paths.Logs, 0o700); err != nil {
		return err
	}
	logPath := filepath.Join(l.Paths.Logs, gatewayLogName)
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer logf.Close()
	args := slices.DeleteFunc(slices.Clone(os.Args[1:]), func(s string) bool {
		return s == "--background" || s == "--background=true"
	})
	child := exec.Command(bin, args...)
	child.Stdout, child.Stderr = logf, logf
	child.Env = os.Environ()
	if err := detach(child); err != nil {
		return err
	}
	if err := child.Start(); err != nil {
		return err
	}
	exited := make(chan error, 1)
	go func() { exited <- child.Wait() }()
	deadline := time.After(startTimeout)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case err := <-exited:
			return fmt.Errorf("the gateway exited at start (%v); the end of %s:\n%s", err, logPath, tail(logPath, 15))
		case <-deadline:
			return fmt.Errorf("the gateway (pid %d) did not answer within %s; see %s", child.Process.Pid, startTimeout, logPath)
		case <-tick.C:
		}
		// The answer must be the child's: another gateway (a cluster node
		// on this port) may answer while the child fails to bind it. A
		// whole-instance gateway says so in its pidfile.
		if _, err := fetchStatus(l.Config.Gateway.Host, l.Config.Gateway.Port); err == nil {
			if pid, _ := readPid(l.Paths.State); node || pid == child.Process.Pid {
				break
			}
		}
	}
	pid := child.Process.Pid // Release makes it -1
	_ = child.Process.Release()
	stop := "nanobot gateway stop"
	if node {
		stop = fmt.Sprintf("kill %d (a cluster node writes no pidfile: several may share this folder)", pid)
	}
	fmt.Fprintf(cmd.OutOrStdout(), "gateway running in the background (pid %d)\n  logs: %s (`nanobot gateway logs -f`)\n  stop: %s\n", pid, logPath, stop)
	return nil
}

func newGatewayStatusCmd(a *app) *cobra.Command {
	return command("status", "Say whether the gateway runs, with its channels and queues (exit status 1 when it does not)", func(cmd *cobra.Command) error {
		pid, alive := readPid(a.loaded.Paths.State)
		w := cmd.OutOrStdout()
		if !alive {
			fmt.Fprintln(w, "gateway:    not running")
			return errNotRunning
		}
		fmt.Fprintf(w, "process:    pid %d\n", pid)
		printGateway(w, &a.loaded.Config)
		return nil
	})
}

func newGatewayStopCmd(a *app) *cobra.Command {
	return command("stop", "Stop the gateway (it finishes running answers first, up to 20 s)", func(cmd *cobra.Command) error {
		pid, err := stopGateway(cmd.Context(), a.loaded.Paths.State)
		if err != nil {
			return err
		}
		fmt.Fprintf(cmd.OutOrStdout(), "gateway stopped (pid %d)\n", pid)
		return nil
	})
}

// stopTimeout is how long stop waits for the gateway to exit: its drain
// (20 s) and a margin.
const stopTimeout = 30 * time.Second

// stopGateway sends SIGTERM to the gateway of stateDir and waits for it
// to exit.
func stopGateway(ctx context.Context, stateDir string) (int, error) {
	pid, alive := readPid(stateDir)
	if !alive {
		return 0, errNotRunning
	}
	if err := terminate(pid); err != nil {
		return pid, fmt.Errorf("stop pid %d: %w", pid, err)
	}
	deadline := time.Now().Add(stopTimeout)
	for processAlive(pid) {
		if time.Now().After(deadline) {
			return pid, fmt.Errorf("the gateway (pid %d) still runs %s after SIGTERM", pid, stopTimeout)
		}
		select {
		case <-ctx.Done():
			return pid, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	return pid, nil
}

func newGatewayRestartCmd(a *app) *cobra.Command {
	return command("restart", "Stop the gateway if it runs, then start it in the background", func(cmd *cobra.Command) error {
		if pid, err := stopGateway(cmd.Context(), a.loaded.Paths.State); err == nil {
			fmt.Fprintf(cmd.OutOrStdout(), "gateway stopped (pid %d)\n", pid)
		} else if !errors.Is(err, errNotRunning) {
			return err
		}
		// The child is `nanobot gateway` with this command's config flags.
		bin, err := os.Executable()
		if err != nil {
			return err
		}
		args := []string{"gateway", "--background"}
		if a.configPath != "" {
			args = append(args, "--config", a.configPath)
		}
		start := exec.CommandContext(cmd.Context(), bin, args...)
		start.Stdout, start.Stderr = cmd.OutOrStdout(), cmd.ErrOrStderr()
		return start.Run()
	})
}

func newGatewayLogsCmd(a *app) *cobra.Command {
	var follow bool
	var lines int
	cmd := command("logs", "Print the end of the background gateway's log (logs/gateway.log); -f follows it", func(cmd *cobra.Command) error {
		path := filepath.Join(a.loaded.Paths.Logs, gatewayLogName)
		if _, err := os.Stat(path); err != nil {
			return fmt.Errorf("no log at %s: it is written by `nanobot gateway --background` (a gateway under systemd logs to the journal: journalctl -u nanobot)", path)
		}
		fmt.Fprint(cmd.OutOrStdout(), tail(path, lines))
		if !follow {
			return nil
		}
		return followFile(cmd.Context(), path, cmd.OutOrStdout())
	})
	cmd.Flags().BoolVarP(&follow, "follow", "f", false, "keep printing what is written")
	cmd.Flags().IntVarP(&lines, "lines", "n", 50, "lines from the end")
	return cmd
}

// tail is the last n lines of the file at path.
func tail(path string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	const window = 256 << 10
	if fi, err := f.Stat(); err == nil && fi.Size() > window {
		_, _ = f.Seek(-window, io.SeekEnd)
	}
	var keep []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		keep = append(keep, sc.Text())
		if len(keep) > n {
			keep = keep[1:]
		}
	}
	if len(keep) == 0 {
		return ""
	}
	return strings.Join(keep, "\n") + "\n"
}

// followFile prints what is appended to path until ctx ends (Ctrl-C).
func followFile(ctx context.Context, path string, w io.Writer) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if _, err := f.Seek(0, io.SeekEnd); err != nil {
		return err
	}
	buf := make([]byte, 32<<10)
	for {
		n, err := f.Read(buf)
		if n > 0 {
			_, _ = w.Write(buf[:n])
			continue
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return err
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(250 * time.Millisecond):
		}
	}
}
