//go:build !linux

package sandbox

func newPidsCgroup(int64) string { return "" }

// ProcessLimitEnforced is false: confinement is Linux-only.
func ProcessLimitEnforced() bool { return false }

// PidsCgroupAvailable is false: cgroups are a Linux feature.
func PidsCgroupAvailable() bool { return false }
