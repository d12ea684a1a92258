//go:build !linux

package sandbox

import "syscall"

func probe() Support {
	return Support{LandlockNote: "Landlock exists only on Linux", BwrapNote: "bubblewrap exists only on Linux"}
}

func setNamespaces(*syscall.SysProcAttr, bool) {}
