package sandbox

import (
	"encoding/binary"
	"testing"

	"golang.org/x/net/bpf"
)

// TestUnixSocketFilterProgram runs the filter of each supported
// architecture in x/net/bpf's interpreter, so the arm64 one is checked on
// an amd64 machine too. The interpreter loads words in network order, so
// the seccomp_data fed to it is written big-endian word by word.
func TestUnixSocketFilterProgram(t *testing.T) {
	const (
		allow, eacces, enosys, kill = retAllow, retErrno | errnoEACCES, retErrno | errnoENOSYS, retKillProcess
	)
	type call struct {
		name       string
		arch, nr   uint32
		arg0, arg1 uint32
		want       uint32
	}
	cases := map[string][]call{
		"amd64": {
			{"socket(AF_UNIX)", 0xc000003e, 41, afUnix, sockStream, eacces},
			{"socket(AF_INET)", 0xc000003e, 41, 2, sockStream, allow},
			{"x32 socket(AF_UNIX)", 0xc000003e, 0x40000000 | 41, afUnix, sockStream, eacces},
			{"socketpair stream", 0xc000003e, 53, afUnix, sockStream | 0x80000, allow},
			{"socketpair seqpacket", 0xc000003e, 53, afUnix, sockSeqpacket, allow},
			{"socketpair dgram", 0xc000003e, 53, afUnix, 2 | 0x800, eacces},
			{"socketpair inet dgram", 0xc000003e, 53, 2, 2, allow},
			{"io_uring_setup", 0xc000003e, 425, 1, 0, enosys},
			{"read", 0xc000003e, 0, 3, 0, allow},
			{"i386 socketcall", 0x40000003, 102, 1, 0, eacces},
			{"i386 socket(AF_UNIX)", 0x40000003, 359, afUnix, sockStream, eacces},
			{"i386 read(1)", 0x40000003, 3, afUnix, 0, allow},
			{"i386 io_uring_enter", 0x40000003, 426, 0, 0, enosys},
			{"another architecture", 0xc00000b7, 198, afUnix, sockStream, kill},
		},
		"arm64": {
			{"socket(AF_UNIX)", 0xc00000b7, 198, afUnix, sockStream, eacces},
			{"socket(AF_INET6)", 0xc00000b7, 198, 10, sockStream, allow},
			{"socketpair dgram", 0xc00000b7, 199, afUnix, 2, eacces},
			{"socketpair stream", 0xc00000b7, 199, afUnix, sockStream, allow},
			{"getpid (41 on amd64)", 0xc00000b7, 41 | 0x40000000, afUnix, 0, allow},
			{"io_uring_register", 0xc00000b7, 427, 0, 0, enosys},
			{"arm socket(AF_UNIX)", 0x40000028, 281, afUnix, sockStream, eacces},
			{"arm socketpair dgram", 0x40000028, 288, afUnix, 2, eacces},
			{"arm socketcall", 0x40000028, 102, 1, 0, eacces},
			{"another architecture", 0xc000003e, 41, afUnix, sockStream, kill},
		},
	}
	for goarch, calls := range cases {
		raw, err := unixSocketFilter(goarch)
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
			got, err := vm.Run(data)
			if err != nil {
				t.Fatalf("%s %s: %v", goarch, c.name, err)
			}
			if uint32(got) != c.want {
				t.Errorf("%s %s: got %#x, want %#x", goarch, c.name, uint32(got), c.want)
			}
		}
	}
	if _, err := unixSocketFilter("riscv64"); err == nil {
		t.Error("riscv64: got a filter, want an error (no table)")
	}
}
