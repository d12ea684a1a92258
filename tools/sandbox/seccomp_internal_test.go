package sandbox

import (
	"encoding/binary"
	"testing"

	"golang.org/x/net/bpf"
)

// TestSocketFilterProgram runs the filter of each supported architecture
// in x/net/bpf's interpreter, so the arm64 one is checked on an amd64
// machine too, with and without its UNIX socket half. The interpreter
// loads words in network order, so the seccomp_data fed to it is written
// big-endian word by word.
func TestSocketFilterProgram(t *testing.T) {
	const (
		allow, eacces, enosys, kill = retAllow, retErrno | errnoEACCES, retErrno | errnoENOSYS, retKillProcess
		noproto, nofamily           = retErrno | errnoEPROTONOSUPPORT, retErrno | errnoEAFNOSUPPORT
	)
	type call struct {
		name             string
		arch, nr         uint32
		arg0, arg1, arg2 uint32
		want             uint32
		// wantAllowUnix is the answer of the filter without its UNIX
		// half (0 = the same as want).
		wantAllowUnix uint32
	}
	cases := map[string][]call{
		"amd64": {
			{"socket(AF_UNIX)", 0xc000003e, 41, afUnix, sockStream, 0, eacces, allow},
			{"socket(AF_INET)", 0xc000003e, 41, afInet, sockStream, 0, allow, 0},
			{"socket(AF_INET, IPPROTO_TCP)", 0xc000003e, 41, afInet, sockStream, 6, allow, 0},
			{"socket(AF_INET, IPPROTO_MPTCP)", 0xc000003e, 41, afInet, sockStream | 0x80000, ipprotoMPTCP, noproto, 0},
			{"socket(AF_INET6, IPPROTO_MPTCP)", 0xc000003e, 41, afInet6, sockStream, ipprotoMPTCP, noproto, 0},
			{"socket(AF_INET, IPPROTO_SMC)", 0xc000003e, 41, afInet, sockStream, ipprotoSMC, noproto, 0},
			{"socket(AF_SMC)", 0xc000003e, 41, afSMC, sockStream, 0, nofamily, 0},
			{"socket(AF_NETLINK, 262)", 0xc000003e, 41, 16, 3, ipprotoMPTCP, allow, 0},
			{"x32 socket(AF_UNIX)", 0xc000003e, 0x40000000 | 41, afUnix, sockStream, 0, eacces, allow},
			{"x32 socket(AF_INET, IPPROTO_MPTCP)", 0xc000003e, 0x40000000 | 41, afInet, sockStream, ipprotoMPTCP, noproto, 0},
			{"socketpair stream", 0xc000003e, 53, afUnix, sockStream | 0x80000, 0, allow, 0},
			{"socketpair seqpacket", 0xc000003e, 53, afUnix, sockSeqpacket, 0, allow, 0},
			{"socketpair dgram", 0xc000003e, 53, afUnix, 2 | 0x800, 0, eacces, allow},
			{"socketpair inet dgram", 0xc000003e, 53, afInet, 2, 0, allow, 0},
			{"io_uring_setup", 0xc000003e, 425, 1, 0, 0, enosys, 0},
			{"read", 0xc000003e, 0, 3, 0, 0, allow, 0},
			{"i386 socketcall", 0x40000003, 102, 1, 0, 0, eacces, 0},
			{"i386 socket(AF_UNIX)", 0x40000003, 359, afUnix, sockStream, 0, eacces, allow},
			{"i386 socket(AF_INET6, IPPROTO_MPTCP)", 0x40000003, 359, afInet6, sockStream, ipprotoMPTCP, noproto, 0},
			{"i386 read(1)", 0x40000003, 3, afUnix, 0, 0, allow, 0},
			{"i386 io_uring_enter", 0x40000003, 426, 0, 0, 0, enosys, 0},
			{"another architecture", 0xc00000b7, 198, afUnix, sockStream, 0, kill, 0},
		},
		"arm64": {
			{"socket(AF_UNIX)", 0xc00000b7, 198, afUnix, sockStream, 0, eacces, allow},
			{"socket(AF_INET6)", 0xc00000b7, 198, afInet6, sockStream, 0, allow, 0},
			{"socket(AF_INET, IPPROTO_MPTCP)", 0xc00000b7, 198, afInet, sockStream, ipprotoMPTCP, noproto, 0},
			{"socket(AF_SMC)", 0xc00000b7, 198, afSMC, sockStream, 0, nofamily, 0},
			{"socketpair dgram", 0xc00000b7, 199, afUnix, 2, 0, eacces, allow},
			{"socketpair stream", 0xc00000b7, 199, afUnix, sockStream, 0, allow, 0},
			{"getpid (41 on amd64)", 0xc00000b7, 41 | 0x40000000, afUnix, 0, 0, allow, 0},
			{"io_uring_register", 0xc00000b7, 427, 0, 0, 0, enosys, 0},
			{"arm socket(AF_UNIX)", 0x40000028, 281, afUnix, sockStream, 0, eacces, allow},
			{"arm socket(AF_INET, IPPROTO_MPTCP)", 0x40000028, 281, afInet, sockStream, ipprotoMPTCP, noproto, 0},
			{"arm socketpair dgram", 0x40000028, 288, afUnix, 2, 0, eacces, allow},
			{"arm socketcall", 0x40000028, 102, 1, 0, 0, eacces, 0},
			{"another architecture", 0xc000003e, 41, afUnix, sockStream, 0, kill, 0},
		},
	}
	for goarch, calls := range cases {
		for _, blockUnix := range []bool{true, false} {
			raw, err := socketFilter(goarch, blockUnix)
			if err != nil {
				t.Fatal(err)
			}
			prog, ok := bpf.Disassemble(raw)
			if !ok {
				t.Fatalf("%s: the filter does not disassemble", goarch)
			}
			vm, err := bpf.NewVM(prog)
			if err != nil {
				t.Fatalf("%s: %v", goarch, err)
			}
			for _, c := range calls {
				data := make([]byte, 64)
				binary.BigEndian.PutUint32(data[offNr:], c.nr)
				binary.BigEndian.PutUint32(data[offArch:], c.arch)
				binary.BigEndian.PutUint32(data[offArg0:], c.arg0)
				binary.BigEndian.PutUint32(data[offArg1:], c.arg1)
				binary.BigEndian.PutUint32(data[offArg2:], c.arg2)
				got, err := vm.Run(data)
				if err != nil {
					t.Fatalf("%s %s: %v", goarch, c.name, err)
				}
				want := c.want
				if !blockUnix && c.wantAllowUnix != 0 {
					want = c.wantAllowUnix
				}
				if uint32(got) != want {
					t.Errorf("%s (blockUnix %v) %s: got %#x, want %#x", goarch, blockUnix, c.name, uint32(got), want)
				}
			}
		}
	}
	if _, err := socketFilter("riscv64", true); err == nil {
		t.Error("riscv64: got a filter, want an error (no table)")
	}
}
