package sandbox

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Limits are resource limits set on a confined child (0 = the default,
// negative = none).
type Limits struct {
	// CPUSeconds is CPU time (RLIMIT_CPU); default 600.
	CPUSeconds int64
	// MemoryMB is address space (RLIMIT_AS); default 8192. Runtimes that
	// reserve much virtual memory (V8, the JVM) may need more.
	MemoryMB int64
	// Processes caps the processes in the child's tree (a pids cgroup
	// where one can be created, and RLIMIT_NPROC, which does not bind
	// root); default 512.
	Processes int64
	// FileSizeMB caps one written file (RLIMIT_FSIZE); default 1024.
	FileSizeMB int64
}

func (l Limits) withDefaults() Limits {
	def := func(v, d int64) int64 {
		switch {
		case v == 0:
			return d
		case v < 0:
			return 0
		}
		return v
	}
	return Limits{
		CPUSeconds: def(l.CPUSeconds, 600), MemoryMB: def(l.MemoryMB, 8192),
		Processes: def(l.Processes, 512), FileSizeMB: def(l.FileSizeMB, 1024),
	}
}

// systemDirs are readable by every confined child: programs, libraries,
// configuration. Missing ones are skipped.
var systemDirs = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt", "/nix/store", "/run/current-system", "/var/lib/dpkg", "/usr/local"}

// deviceFiles may be read and written: the harmless devices programs
// expect.
var deviceFiles = []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty"}

// policy is what the helper applies before it executes the command; the
// parent passes it as one JSON argument.
type policy struct {
	ReadOnly  []string `json:"ro,omitempty"`
	ReadWrite []string `json:"rw,omitempty"`
	Files     []string `json:"files,omitempty"` // read-write single files
	Network   bool     `json:"net"`
	// UnixSockets: the command may create UNIX sockets (no seccomp
	// filter; Spec.AllowUnixSockets).
	UnixSockets bool   `json:"unix,omitempty"`
	Limits      Limits `json:"limits"`
	// Cgroup is a pids cgroup folder the helper moves itself into ("" =
	// none).
	Cgroup string `json:"cgroup,omitempty"`
	// Mode is ModeLandlock ("" too) or ModeBwrap.
	Mode Mode `json:"mode,omitempty"`
	// Bwrap is the bubblewrap program of ModeBwrap.
	Bwrap string `json:"bwrap,omitempty"`
	// Namespaces: the gateway started the helper in new user, PID and
	// mount namespaces (see setNamespaces), and in a network namespace
	// when Network is false. The helper stays as their init and confines
	// and executes the command in a second stage of itself.
	Namespaces bool `json:"ns,omitempty"`
	// Stage2 marks that second stage.
	Stage2 bool `json:"stage2,omitempty"`
	// Proc: the helper mounted a /proc of the sandbox's own PID namespace,
	// which the command may then read.
	Proc bool `json:"proc,omitempty"`
	// WallFD is the inherited descriptor of the port wall's Landlock
	// ruleset (portwall.go), which the helper enforces and closes before
	// the command runs; 0 = no wall.
	WallFD int `json:"wallfd,omitempty"`
}

// socketFilter says whether the helper installs the socket filter
// (seccomp.go) and whether with its UNIX socket half: that half unless
// UnixSockets, and the filter as a whole also wherever Landlock's TCP
// rules are what keeps the command off a port (the port wall, or the
// network off without a network namespace), because MPTCP and SMC sockets
// would get past them.
func (p policy) socketFilter() (install, blockUnix bool) {
	tcpRules := p.WallFD > 0 || !p.Network && !p.Namespaces && p.Mode != ModeBwrap
	blockUnix = !p.UnixSockets
	return blockUnix || tcpRules && UnixSocketFilterSupported(), blockUnix
}

// policyFor builds the policy of spec: system folders, spec's folders and
// the program's own folder read-only, spec.Writable read-write.
func policyFor(spec Spec, prog string) policy {
	p := policy{Network: !spec.DenyNetwork, UnixSockets: spec.AllowUnixSockets, Limits: spec.Limits.withDefaults(), Files: deviceFiles}
	p.ReadOnly = append(p.ReadOnly, systemDirs...)
	p.ReadOnly = append(p.ReadOnly, spec.Readable...)
	if dir := filepath.Dir(prog); !underAny(dir, p.ReadOnly) {
		p.ReadOnly = append(p.ReadOnly, dir)
	}
	p.ReadWrite = append(p.ReadWrite, spec.Writable...)
	p.ReadOnly = clean(p.ReadOnly)
	p.ReadWrite = clean(p.ReadWrite)
	return p
}

func (p policy) encode() string {
	b, _ := json.Marshal(p)
	return string(b)
}

func decodePolicy(s string) (policy, error) {
	var p policy
	if err := json.Unmarshal([]byte(s), &p); err != nil {
		return p, fmt.Errorf("sandbox: bad policy: %w", err)
	}
	return p, nil
}

// clean makes paths absolute and resolves symlinks (Landlock rules hold on
// the real folders), dropping duplicates. Missing paths are kept as given;
// the helper skips them.
func clean(paths []string) []string {
	var out []string
	for _, p := range paths {
		if p == "" {
			continue
		}
		if abs, err := filepath.Abs(p); err == nil {
			p = abs
		}
		if real, err := filepath.EvalSymlinks(p); err == nil {
			p = real
		}
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}

func underAny(path string, dirs []string) bool {
	for _, d := range dirs {
		if path == d || strings.HasPrefix(path, strings.TrimSuffix(d, "/")+"/") {
			return true
		}
	}
	return false
}

// privateTmp points TMPDIR at a folder the child may write (the first
// writable folder's .tmp), unless it already is in one: the shared /tmp is
// not writable under confinement.
func privateTmp(env []string, writable []string) []string {
	if len(writable) == 0 {
		return env
	}
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "TMPDIR="); ok && underAny(v, clean(writable)) {
			return env
		}
	}
	tmp := filepath.Join(writable[0], ".tmp")
	if err := os.MkdirAll(tmp, 0o700); err != nil {
		return env
	}
	return SetEnv(env, "TMPDIR", tmp)
}
