package sandbox

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
)

// HelperCommand is the subcommand that runs the helper: the gateway starts
// a confined child as "<nanobot> sandbox-exec [flags] -- program args...".
const HelperCommand = "sandbox-exec"

// helperEnv marks a helper invocation so that any binary linking this
// package (nanobot itself, or a test binary) turns into the helper before
// its main runs; see reexec.go.
const helperEnv = "NANOBOT_SANDBOX_HELPER"

// Exit codes of the helper when it cannot run the program (as a shell's).
const (
	exitSetup    = 126
	exitNotFound = 127
)

// helperConfig is the helper's parsed command line.
type helperConfig struct {
	mode      Mode
	ro, rw    []string
	noNetwork bool
	userNS    bool // started in a fresh user namespace by the gateway
	stage2    bool // started by the helper's init to confine and exec
	raw       []string
	limits    Limits
	bwrap     string
	argv      []string
}

type listFlag struct{ list *[]string }

func (l listFlag) String() string { return "" }
func (l listFlag) Set(v string) error {
	*l.list = append(*l.list, v)
	return nil
}

// parseHelper reads the helper's flags; the program and its arguments
// follow "--".
func parseHelper(args []string, stderr io.Writer) (helperConfig, error) {
	var c helperConfig
	fs := flag.NewFlagSet(HelperCommand, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: nanobot %s [flags] -- program [args...]\n\nRuns program confined: Landlock (or bubblewrap), resource limits.\n\n", HelperCommand)
		fs.PrintDefaults()
	}
	mode := fs.String("mode", string(ModeLandlock), "confinement: landlock or bwrap")
	fs.Var(listFlag{&c.ro}, "ro", "folder or file the program may read (repeatable)")
	fs.Var(listFlag{&c.rw}, "rw", "folder or file the program may read and write (repeatable)")
	fs.BoolVar(&c.noNetwork, "no-network", false, "deny network access")
	fs.BoolVar(&c.userNS, "userns", false, "the helper runs in fresh user and PID namespaces (set by the gateway): it stays as their init")
	fs.BoolVar(&c.stage2, "stage2", false, "internal: started by the helper's init")
	fs.IntVar(&c.limits.CPUSeconds, "cpu", 0, "CPU seconds (0: no limit)")
	fs.IntVar(&c.limits.MemoryMB, "mem", 0, "address space per process in MiB (0: no limit)")
	fs.IntVar(&c.limits.Processes, "nproc", 0, "processes of the program's tree (0: no limit)")
	fs.IntVar(&c.limits.FileSizeMB, "fsize", 0, "largest file written in MiB (0: no limit)")
	fs.StringVar(&c.bwrap, "bwrap", "bwrap", "bubblewrap program for --mode=bwrap")
	if err := fs.Parse(args); err != nil {
		return c, errUsage{err}
	}
	c.raw = args
	c.mode = Mode(*mode)
	if c.mode != ModeLandlock && c.mode != ModeBwrap {
		return c, fmt.Errorf("--mode: want landlock or bwrap, got %q", *mode)
	}
	c.argv = fs.Args()
	if len(c.argv) == 0 || c.argv[0] == "" {
		return c, errors.New("no program given (put it after --)")
	}
	for _, l := range []Limits{c.limits} {
		if l.CPUSeconds < 0 || l.MemoryMB < 0 || l.Processes < 0 || l.FileSizeMB < 0 {
			return c, errors.New("limits must not be negative")
		}
	}
	c.ro, c.rw = cleanPaths(c.ro), cleanPaths(c.rw)
	return c, nil
}

// ExecMain is the helper: it confines itself as args say (pids cgroup,
// Landlock or a bubblewrap command line, resource limits) and then replaces
// itself with the program, so the program and everything it starts stay
// confined. Started in fresh namespaces (--userns) it first becomes their
// init and runs those steps in a second stage of itself (see runInit). It returns only when that fails, with 126 (127 when the
// program is not found) after a message on stderr; the program is never
// run unconfined.
func ExecMain(args []string) int {
	c, err := parseHelper(args, os.Stderr)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		if !errors.As(err, new(errUsage)) { // the flag package printed those
			fmt.Fprintf(os.Stderr, "nanobot %s: %v\n", HelperCommand, err)
		}
		return 2
	}
	err = execConfined(c)
	fmt.Fprintf(os.Stderr, "nanobot %s: %v\n", HelperCommand, err)
	if errors.Is(err, errNotFound) {
		return exitNotFound
	}
	return exitSetup
}

var errNotFound = errors.New("program not found")

// errUsage is a command-line error the flag package already reported.
type errUsage struct{ error }

func (e errUsage) Unwrap() error { return e.error }

// childEnv is the helper's environment minus its marker.
func childEnv() []string {
	var out []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, helperEnv+"=") {
			out = append(out, kv)
		}
	}
	return out
}
