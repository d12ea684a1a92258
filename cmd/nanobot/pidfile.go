package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// The gateway writes its process id to state/gateway.pid while it runs,
// in the foreground or the background: `nanobot gateway status|stop|
// restart` find it there, and a second gateway on the same instance
// folder refuses to start instead of fighting the first over the bots.

const pidFileName = "gateway.pid"

func pidPath(stateDir string) string { return filepath.Join(stateDir, pidFileName) }

// readPid returns the pid in the file and whether that gateway process
// still runs. The file holds the pid and, where /proc has it, the
// process's start time: a stale file from a crash may name a pid that is
// dead or now another process's.
func readPid(stateDir string) (pid int, alive bool) {
	data, err := os.ReadFile(pidPath(stateDir))
	if err != nil {
		return 0, false
	}
	fields := strings.Fields(string(data))
	if len(fields) == 0 {
		return 0, false
	}
	pid, err = strconv.Atoi(fields[0])
	if err != nil || pid <= 0 {
		return 0, false
	}
	if len(fields) > 1 && fields[1] != startTime(pid) {
		return pid, false // the pid now names another process
	}
	return pid, processAlive(pid)
}

// anotherGateway says so when another live process holds the pidfile.
func anotherGateway(stateDir string) error {
	if pid, alive := readPid(stateDir); alive && pid != os.Getpid() {
		return fmt.Errorf("another gateway already runs on this instance (pid %d; `nanobot gateway stop` stops it)", pid)
	}
	return nil
}

// writePid claims the pidfile for this process; it fails when another
// gateway holds it.
func writePid(stateDir string) (release func(), err error) {
	if err := anotherGateway(stateDir); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(stateDir, 0o700); err != nil {
		return nil, err
	}
	path := pidPath(stateDir)
	line := strconv.Itoa(os.Getpid())
	if st := startTime(os.Getpid()); st != "" {
		line += " " + st
	}
	if err := os.WriteFile(path, []byte(line+"\n"), 0o600); err != nil {
		return nil, fmt.Errorf("pidfile: %w", err)
	}
	return func() {
		// Only our own: a gateway started after a crash may own it now.
		if pid, _ := readPid(stateDir); pid == os.Getpid() {
			_ = os.Remove(path)
		}
	}, nil
}

// errNotRunning is what status and stop say when no gateway runs.
var errNotRunning = errors.New("no gateway runs on this instance")
