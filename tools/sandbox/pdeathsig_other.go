//go:build unix && !linux

package sandbox

import "syscall"

func setParentDeathSignal(*syscall.SysProcAttr) {}
