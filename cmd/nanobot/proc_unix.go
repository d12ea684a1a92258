//go:build !windows

package main

import (
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
)

// processAlive reports whether pid is a running nanobot gateway: signal 0
// reaches it, and where /proc says what it runs, it is a "gateway"
// command (a pid reused by another program does not count).
func processAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	if err != nil && !errors.Is(err, syscall.EPERM) {
		return false
	}
	cmdline, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil {
		return true // no /proc (macOS): signal 0 is all there is
	}
	return strings.Contains(string(cmdline), "gateway")
}

// startTime is when pid started, in clock ticks since boot (/proc's
// field 22), or "" where there is no /proc: with the pid it names one
// process, even after the pid is reused.
func startTime(pid int) string {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ""
	}
	// The command name (field 2) may hold spaces: count from its ")".
	i := strings.LastIndexByte(string(stat), ')')
	if i < 0 {
		return ""
	}
	f := strings.Fields(string(stat[i+1:]))
	if len(f) < 20 {
		return ""
	}
	return f[19]
}

// terminate asks pid to stop (SIGTERM: the gateway drains and exits).
func terminate(pid int) error { return syscall.Kill(pid, syscall.SIGTERM) }

// detach makes cmd a session of its own: closing the terminal or its
// shell does not stop it.
func detach(cmd *exec.Cmd) error {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	return nil
}

// execSelf replaces the process with a fresh run of the same binary and
// arguments (same pid: a service manager or the pidfile sees no gap).
func execSelf() error {
	bin, err := os.Executable()
	if err != nil {
		return err
	}
	return syscall.Exec(bin, os.Args, os.Environ())
}
