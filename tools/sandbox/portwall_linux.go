package sandbox

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"

	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// wall is this process's port wall ruleset (see portwall.go). It is
// package state because what it caches — a kernel object describing this
// process's own listeners — belongs to the process, not to a caller.
var wall = portWall{fd: -1}

// portWall caches the Landlock ruleset that allows TCP connect to every
// port but a given set. It is safe for concurrent use: a rebuild holds the
// lock, so commands started meanwhile wait for that one build instead of
// each making their own.
type portWall struct {
	mu    sync.Mutex
	fd    int      // the ruleset; -1 before the first build
	ports []uint16 // the ports fd denies, sorted
	// builds counts rulesets built, for the test that they are reused.
	builds atomic.Int64
}

// ruleset returns a new descriptor of the ruleset that denies exactly
// ports (sorted, without duplicates), building it first when the cached
// one denies another set. The returned file is the caller's: it is a
// duplicate, so a later rebuild can close the cached descriptor while
// commands prepared with the old one have yet to start.
func (w *portWall) ruleset(ports []uint16) (*os.File, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.fd < 0 || !slices.Equal(w.ports, ports) {
		fd, err := buildPortWall(ports)
		if err != nil {
			return nil, err
		}
		if w.fd >= 0 {
			unix.Close(w.fd)
		}
		w.fd, w.ports = fd, slices.Clone(ports)
		w.builds.Add(1)
	}
	dup, err := unix.FcntlInt(uintptr(w.fd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("sandbox: port wall: dup: %w", err)
	}
	return os.NewFile(uintptr(dup), "landlock-port-wall"), nil
}

// buildPortWall makes a Landlock ruleset that handles TCP connect and
// allows it to every port (0 included) except deny, which is sorted.
func buildPortWall(deny []uint16) (int, error) {
	attr := ll.RulesetAttr{HandledAccessNet: ll.AccessNetConnectTCP}
	fd, err := ll.LandlockCreateRuleset(&attr, 0)
	if err != nil {
		return -1, fmt.Errorf("sandbox: port wall: create ruleset: %w", err)
	}
	rule := ll.NetPortAttr{AllowedAccess: ll.AccessNetConnectTCP}
	next := 0
	for port := 0; port <= 0xffff; port++ {
		if next < len(deny) && int(deny[next]) == port {
			next++
			continue
		}
		rule.Port = uint64(port)
		if err := ll.LandlockAddNetPortRule(fd, &rule, 0); err != nil {
			unix.Close(fd)
			return -1, fmt.Errorf("sandbox: port wall: allow TCP port %d: %w", port, err)
		}
	}
	return fd, nil
}

// portWallFile returns the port wall for a command confined by p, or nil
// when none applies: the network is off (there is nothing to reach), the
// host cannot raise it (PortWall says why), or this process listens on no
// TCP port.
func portWallFile(p policy) (*os.File, error) {
	if !p.Network || portWallMissing(p.Mode) != "" {
		return nil, nil
	}
	ports, err := ownListeningPorts()
	if err != nil {
		return nil, fmt.Errorf("sandbox: port wall: %w", err)
	}
	if len(ports) == 0 {
		return nil, nil
	}
	return wall.ruleset(ports)
}

// raisePortWall runs in the helper: it restricts this thread with the
// port wall's ruleset at fd, a Landlock layer of its own beside the
// file-system one, then closes fd. The command must never hold that
// descriptor: the ruleset is shared with every later command, and whoever
// holds it can add rules to it (allow the gateway's port).
func raisePortWall(fd int) error {
	defer unix.Close(fd)
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("port wall: no_new_privs: %w", err)
	}
	if err := ll.LandlockRestrictSelf(fd, 0); err != nil {
		return fmt.Errorf("port wall: restrict: %w", err)
	}
	return nil
}

// ownListeningPorts returns the TCP ports this process is listening on,
// sorted and without duplicates. It asks each of its open descriptors
// (the entries of /proc/self/fd) whether it is a listening TCP or MPTCP
// socket and on which port: a few system calls per descriptor. (Reading
// /proc/net/tcp instead makes the kernel walk every TCP socket of the
// host, a cost that grows with the host's load: 2.7 ms with a thousand
// sockets.) A descriptor closed or reused while this runs is answered for
// what it is at the moment it is asked, like a listener opened a moment
// later is missed: the wall is as of the command's start.
func ownListeningPorts() ([]uint16, error) {
	dir, err := os.Open("/proc/self/fd")
	if err != nil {
		return nil, err
	}
	names, err := dir.Readdirnames(-1)
	dir.Close()
	if err != nil {
		return nil, fmt.Errorf("read /proc/self/fd: %w", err)
	}
	var ports []uint16
	for _, name := range names {
		if fd, err := strconv.Atoi(name); err == nil {
			if port, ok := listeningTCPPort(fd); ok {
				ports = append(ports, port)
			}
		}
	}
	slices.Sort(ports)
	return slices.Compact(ports), nil
}

// listeningTCPPort returns the local port of fd when fd is a listening
// TCP or MPTCP socket of IPv4 or IPv6.
func listeningTCPPort(fd int) (uint16, bool) {
	// Not a socket (ENOTSOCK), or not listening: the common case first.
	if v, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_ACCEPTCONN); err != nil || v == 0 {
		return 0, false
	}
	if proto, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_PROTOCOL); err != nil || proto != unix.IPPROTO_TCP && proto != unix.IPPROTO_MPTCP {
		return 0, false
	}
	switch sa, _ := unix.Getsockname(fd); a := sa.(type) {
	case *unix.SockaddrInet4:
		return uint16(a.Port), true
	case *unix.SockaddrInet6:
		return uint16(a.Port), true
	}
	return 0, false
}

// portDiscovery checks once that this process can see its listening
// sockets; where it cannot, there is no telling which ports to wall.
var portDiscovery = sync.OnceValue(func() error {
	_, err := ownListeningPorts()
	return err
})

// portDiscoveryMissing says why this process cannot find its own
// listening ports, or "" when it can.
func portDiscoveryMissing() string {
	if err := portDiscovery(); err != nil {
		return "cannot list the gateway's own listening sockets: " + err.Error()
	}
	return ""
}
