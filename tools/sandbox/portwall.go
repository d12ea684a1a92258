package sandbox

import (
	"fmt"
	"os"
	"runtime"
)

// The port wall. The gateway serves its workbench, web chat and API on a
// loopback port, and with the network on a confined command could connect
// to it and act as the owner. The credential check on every route is the
// main defence; the wall is the second one: a confined command cannot
// connect to any TCP port this process is listening on when the command
// starts (found in /proc, so the web port, webhook listeners, pprof and a
// sign-in's callback listener are all covered without wiring), on any
// address: 127.0.0.1, [::1], the host's other addresses.
//
// Landlock (ABI 4, Linux 6.7) can only allow TCP ports, not deny them, so
// the wall is a ruleset that handles TCP connect and allows every port but
// those. Adding 65,535 rules takes a few hundred milliseconds, so the
// gateway builds the ruleset once, keeps it, rebuilds it only when the set
// of ports changes, and hands each helper a duplicate of its descriptor;
// the helper enforces it as a second Landlock layer beside the file-system
// one (in bwrap mode, before it executes bubblewrap: a layer that handles
// no file-system access does not stop bubblewrap's mounts). Landlock's TCP
// rules do not see MPTCP or SMC sockets, which reach TCP listeners too, so
// the socket filter (seccomp.go) refuses to create those wherever the wall
// is up.
//
// Landlock rules name ports, not addresses: a command is also kept off the
// same port numbers on other hosts. With the network off there is nothing
// to wall (no TCP at all, or a network namespace of its own).

// PortWall reports whether commands confined under m are kept off the TCP
// ports this process listens on while their network is on, and if not,
// why not, in words for a log line or `nanobot doctor`. Without the wall a
// command that can reach the network can reach the gateway's own port, and
// the gateway's credential check is the only thing in its way.
func PortWall(m Mode) (ok bool, why string) {
	got, err := ResolveMode(m)
	if err != nil {
		return false, err.Error()
	}
	if why := portWallMissing(got); why != "" {
		return false, why
	}
	return true, fmt.Sprintf("Landlock (ABI %d) refuses confined commands TCP connections to the gateway's own listening ports", LandlockABI())
}

// portWallMissing says why the wall cannot be raised for commands of the
// resolved mode m, or "" when it can.
func portWallMissing(m Mode) string {
	switch {
	case m == ModeNone:
		return "commands are not confined (sandbox mode none)"
	case LandlockABI() < 4:
		return fmt.Sprintf("Landlock TCP port rules need ABI 4 (Linux 6.7); this kernel has ABI %d", LandlockABI())
	case !UnixSocketFilterSupported():
		return fmt.Sprintf("this build has no seccomp filter for %s to refuse MPTCP sockets, which Landlock's TCP rules do not cover", runtime.GOARCH)
	}
	if m == ModeBwrap && os.Geteuid() != 0 {
		// An unprivileged process needs no_new_privs to enforce a Landlock
		// ruleset, and under it a setuid bubblewrap gains nothing.
		if bw, err := Bwrap(); err == nil {
			if fi, err := os.Stat(bw); err == nil && fi.Mode()&os.ModeSetuid != 0 {
				return "bubblewrap (" + bw + ") is setuid, which no_new_privs (needed for Landlock) would disarm"
			}
		}
	}
	return portDiscoveryMissing()
}
