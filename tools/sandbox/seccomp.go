package sandbox

import (
	"fmt"
	"runtime"

	"golang.org/x/net/bpf"
)

// The socket filter. Landlock does not mediate connect() to an existing
// pathname socket on the kernels nanobot runs on, and a seccomp filter
// cannot read the address connect() is given, so the filter works one step
// earlier: a confined command cannot create a UNIX socket at all
// (socket(AF_UNIX, ...) fails with EACCES), and without one it cannot
// connect to any. Socket pairs stay where they cannot be pointed anywhere:
// stream and seqpacket pairs are connected to each other for good, while a
// datagram pair could send to any address, so those are refused too.
// (Spec.AllowUnixSockets leaves all of that out.)
//
// Landlock's TCP rules (network off, the port wall) check TCP sockets
// only, and two other protocols reach any TCP listener: an MPTCP socket
// falls back to plain TCP against a server that does not speak MPTCP, and
// SMC falls back to its TCP connection, both made inside the kernel where
// Landlock does not look. So the filter refuses to create them
// (EPROTONOSUPPORT and EAFNOSUPPORT, what a kernel built without them
// says; programs that try MPTCP first fall back to TCP).
//
// io_uring is refused (ENOSYS, which programs take as "no io_uring here"
// and fall back) because its socket operation would bypass the filter. A
// system call of an architecture the filter does not know kills the
// process rather than running unchecked.

// Values the filter tests, from the kernel's UAPI headers.
const (
	afUnix               = 1
	afInet               = 2
	afInet6              = 10
	afSMC                = 43
	ipprotoSMC           = 256
	ipprotoMPTCP         = 262
	sockStream           = 1
	sockSeqpacket        = 5
	sockTypeMask         = 0xf
	x32SyscallBit        = 0x40000000
	errnoEACCES          = 13
	errnoENOSYS          = 38
	errnoEPROTONOSUPPORT = 93
	errnoEAFNOSUPPORT    = 97
	retAllow             = 0x7fff0000
	retErrno             = 0x00050000
	retKillProcess       = 0x80000000

	// Offsets in struct seccomp_data: nr, arch, instruction pointer,
	// then six 64-bit arguments (their low halves first: little endian,
	// as every architecture below is).
	offNr   = 0
	offArch = 4
	offArg0 = 16
	offArg1 = 24
	offArg2 = 32
)

// syscallABI names the system calls the filter looks at in one of the
// ABIs a kernel runs (0 = not in this ABI).
type syscallABI struct {
	audit                      uint32 // AUDIT_ARCH_*
	socket, socketpair         uint32
	socketcall                 uint32 // the multiplexer older 32-bit ABIs have
	ioUringSetup, ioUringEnter uint32
	ioUringRegister            uint32
	stripX32                   bool // x86-64: x32 calls are the same numbers with x32SyscallBit set
}

// filterABIs are the ABIs of each supported GOARCH: the native one and the
// 32-bit one the kernel may run beside it (a 32-bit program is no way
// around the filter).
var filterABIs = map[string][]syscallABI{
	"amd64": {
		{audit: 0xc000003e, socket: 41, socketpair: 53, ioUringSetup: 425, ioUringEnter: 426, ioUringRegister: 427, stripX32: true},
		{audit: 0x40000003, socket: 359, socketpair: 360, socketcall: 102, ioUringSetup: 425, ioUringEnter: 426, ioUringRegister: 427},
	},
	"arm64": {
		{audit: 0xc00000b7, socket: 198, socketpair: 199, ioUringSetup: 425, ioUringEnter: 426, ioUringRegister: 427},
		{audit: 0x40000028, socket: 281, socketpair: 288, socketcall: 102, ioUringSetup: 425, ioUringEnter: 426, ioUringRegister: 427},
	},
}

// UnixSocketFilterSupported reports whether this build can block UNIX
// sockets (it has the filter for amd64 and arm64). Elsewhere confined
// commands run only with Spec.AllowUnixSockets, and without the filter's
// other half, so Landlock's TCP rules are not the whole story there (see
// PortWall).
func UnixSocketFilterSupported() bool { return filterABIs[runtime.GOARCH] != nil }

// errNoUnixFilter is why a confining mode refuses to run a command on an
// architecture without the filter.
func errNoUnixFilter() error {
	return fmt.Errorf("%w: blocking UNIX sockets needs a seccomp filter, which this build has for amd64 and arm64 only (this is %s); set tools.exec.allowUnixSockets to true to run confined commands without it", ErrUnsupportedMode, runtime.GOARCH)
}

// socketFilter assembles the filter for goarch; blockUnix adds the UNIX
// socket half.
func socketFilter(goarch string, blockUnix bool) ([]bpf.RawInstruction, error) {
	abis := filterABIs[goarch]
	if abis == nil {
		return nil, errNoUnixFilter()
	}
	var a asm
	a.emit(bpf.LoadAbsolute{Off: offArch, Size: 4})
	for i, abi := range abis {
		next := fmt.Sprintf("abi%d", i+1)
		a.jeq(abi.audit, "", next)
		a.emit(bpf.LoadAbsolute{Off: offNr, Size: 4})
		if abi.stripX32 {
			a.emit(bpf.ALUOpConstant{Op: bpf.ALUOpAnd, Val: ^uint32(x32SyscallBit)})
		}
		a.jeq(abi.socket, "socket", "")
		a.jeq(abi.socketpair, "socketpair", "")
		a.jeq(abi.socketcall, "eacces", "")
		a.jeq(abi.ioUringSetup, "enosys", "")
		a.jeq(abi.ioUringEnter, "enosys", "")
		a.jeq(abi.ioUringRegister, "enosys", "")
		a.emit(bpf.RetConstant{Val: retAllow})
		a.label(next)
	}
	a.emit(bpf.RetConstant{Val: retKillProcess})

	a.label("socket")
	a.emit(bpf.LoadAbsolute{Off: offArg0, Size: 4})
	if blockUnix {
		a.jeq(afUnix, "eacces", "")
	}
	a.jeq(afInet, "inet", "")
	a.jeq(afInet6, "inet", "")
	a.jeq(afSMC, "eafnosupport", "allow")
	a.label("inet")
	a.emit(bpf.LoadAbsolute{Off: offArg2, Size: 4})
	a.jeq(ipprotoMPTCP, "eprotonosupport", "")
	a.jeq(ipprotoSMC, "eprotonosupport", "allow")

	a.label("socketpair")
	if blockUnix {
		a.emit(bpf.LoadAbsolute{Off: offArg0, Size: 4})
		a.jeq(afUnix, "", "allow")
		a.emit(bpf.LoadAbsolute{Off: offArg1, Size: 4})
		a.emit(bpf.ALUOpConstant{Op: bpf.ALUOpAnd, Val: sockTypeMask})
		a.jeq(sockStream, "allow", "")
		a.jeq(sockSeqpacket, "allow", "eacces")
	}

	a.label("allow")
	a.emit(bpf.RetConstant{Val: retAllow})
	a.label("eacces")
	a.emit(bpf.RetConstant{Val: retErrno | errnoEACCES})
	a.label("enosys")
	a.emit(bpf.RetConstant{Val: retErrno | errnoENOSYS})
	a.label("eprotonosupport")
	a.emit(bpf.RetConstant{Val: retErrno | errnoEPROTONOSUPPORT})
	a.label("eafnosupport")
	a.emit(bpf.RetConstant{Val: retErrno | errnoEAFNOSUPPORT})
	return a.assemble()
}

// asm is a classic-BPF program with jumps to named labels, resolved by
// assemble (BPF jumps are forward offsets of at most 255).
type asm struct {
	ins    []bpf.Instruction
	jumps  map[int][2]string // index of a JumpIf -> its true and false labels ("" = the next)
	labels map[string]int
}

func (a *asm) emit(in bpf.Instruction) { a.ins = append(a.ins, in) }

func (a *asm) label(name string) {
	if a.labels == nil {
		a.labels = map[string]int{}
	}
	a.labels[name] = len(a.ins)
}

// jeq jumps to ifTrue when the accumulator equals val, else to ifFalse.
// A zero val (a call this ABI lacks) emits nothing; every value the
// filter compares is otherwise non-zero.
func (a *asm) jeq(val uint32, ifTrue, ifFalse string) {
	if val == 0 {
		return
	}
	if a.jumps == nil {
		a.jumps = map[int][2]string{}
	}
	a.jumps[len(a.ins)] = [2]string{ifTrue, ifFalse}
	a.emit(bpf.JumpIf{Cond: bpf.JumpEqual, Val: val})
}

func (a *asm) assemble() ([]bpf.RawInstruction, error) {
	for i, targets := range a.jumps {
		j := a.ins[i].(bpf.JumpIf)
		skips := [2]uint8{}
		for k, name := range targets {
			if name == "" {
				continue
			}
			at, ok := a.labels[name]
			if !ok || at <= i || at-i-1 > 255 {
				return nil, fmt.Errorf("sandbox: seccomp filter: bad jump to %q", name)
			}
			skips[k] = uint8(at - i - 1)
		}
		j.SkipTrue, j.SkipFalse = skips[0], skips[1]
		a.ins[i] = j
	}
	return bpf.Assemble(a.ins)
}
