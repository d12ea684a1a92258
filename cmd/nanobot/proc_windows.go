//go:build windows

package main

import (
	"errors"
	"os"
	"os/exec"
)

// processAlive reports whether pid runs (Windows: FindProcess opens it).
func processAlive(pid int) bool {
	p, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	_ = p.Release()
	return true
}

// startTime is not known on Windows.
func startTime(int) string { return "" }

// terminate stops pid; Windows has no SIGTERM, so the gateway ends at once.
func terminate(pid int) error {
	p, err := os.FindProcess(pid)
	if err != nil {
		return err
	}
	return p.Kill()
}

// detach is not available: run the gateway as a Windows service instead.
func detach(*exec.Cmd) error {
	return errors.New("--background is not supported on Windows; run the gateway as a service (e.g. with NSSM) instead")
}

// execSelf cannot replace a process on Windows: the gateway has stopped,
// and its service manager (or the user) starts it again.
func execSelf() error {
	return errors.New("restart: the gateway stopped; Windows cannot restart it in place, so start it again (or let its service manager)")
}
