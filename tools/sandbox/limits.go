package sandbox

import "strconv"

// Limits are the resource limits a confined child runs under. A zero field
// means its default; a negative one means no limit.
type Limits struct {
	// CPUSeconds is the CPU time the child may use (RLIMIT_CPU).
	CPUSeconds int
	// MemoryMB is the address space of each process (RLIMIT_AS).
	MemoryMB int
	// Processes is how many processes and threads the child's tree may
	// have at once (RLIMIT_NPROC, counted per user namespace, plus a pids
	// cgroup where one can be created).
	Processes int
	// FileSizeMB is the largest file the child may write (RLIMIT_FSIZE).
	FileSizeMB int
}

// Defaults for Limits.
const (
	DefaultCPUSeconds = 600
	DefaultMemoryMB   = 8192
	DefaultProcesses  = 512
	DefaultFileSizeMB = 1024
)

// withDefaults fills zero fields.
func (l Limits) withDefaults() Limits {
	pick := func(v, def int) int {
		if v == 0 {
			return def
		}
		return v
	}
	return Limits{
		CPUSeconds: pick(l.CPUSeconds, DefaultCPUSeconds),
		MemoryMB:   pick(l.MemoryMB, DefaultMemoryMB),
		Processes:  pick(l.Processes, DefaultProcesses),
		FileSizeMB: pick(l.FileSizeMB, DefaultFileSizeMB),
	}
}

// flags renders the limits for the helper; unlimited ones are left out.
func (l Limits) flags() []string {
	var out []string
	add := func(name string, v int) {
		if v > 0 {
			out = append(out, "--"+name+"="+strconv.Itoa(v))
		}
	}
	add("cpu", l.CPUSeconds)
	add("mem", l.MemoryMB)
	add("nproc", l.Processes)
	add("fsize", l.FileSizeMB)
	return out
}
