//go:build !linux

package sandbox

import (
	"errors"
	"syscall"
)

// Bwrap reports that bubblewrap is a Linux tool.
func Bwrap() (string, error) { return "", errors.New("bubblewrap exists only on Linux") }

// Namespaces is false: they are a Linux feature.
func Namespaces() bool { return false }

func setNamespaces(*syscall.SysProcAttr, bool) {}
