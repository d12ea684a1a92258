package sandbox

import (
	"fmt"
	"os"
	"strings"
	"sync"
)

// LandlockTargetABI is the newest Landlock ABI whose rules the helper asks
// for; on older kernels the request is lowered to what they support.
const LandlockTargetABI = 7

// Support is what this host offers for confining children.
type Support struct {
	// LandlockABI is the kernel's Landlock ABI version (0: none).
	LandlockABI int
	// LandlockNote says why Landlock is unavailable.
	LandlockNote string
	// Bwrap is the path of a working bubblewrap ("" when missing).
	Bwrap string
	// BwrapNote says why bubblewrap is unavailable.
	BwrapNote string
	// UserNS reports that the gateway may create user and network
	// namespaces: the landlock mode then gives each child its own (process
	// counts per child; no network at all with network off).
	UserNS bool
	// PidsCgroup reports that the helper can put each child in a pids
	// cgroup of its own, which caps processes even for root.
	PidsCgroup bool
	// Helper is the executable that re-executes itself as the helper.
	Helper string
	// HelperNote says why no helper could be found.
	HelperNote string
}

// AppliedLandlockABI is the ABI the helper enforces: the kernel's, capped at
// LandlockTargetABI.
func (s Support) AppliedLandlockABI() int { return min(s.LandlockABI, LandlockTargetABI) }

// Best is the strongest mode available: landlock, else bwrap, else none.
func (s Support) Best() Mode {
	switch {
	case s.Helper == "":
		return ModeNone
	case s.LandlockABI > 0:
		return ModeLandlock
	case s.Bwrap != "":
		return ModeBwrap
	}
	return ModeNone
}

// available explains why mode m cannot be used ("" when it can).
func (s Support) available(m Mode) string {
	if m == ModeNone {
		return ""
	}
	if s.Helper == "" {
		return "no helper executable: " + s.HelperNote
	}
	switch m {
	case ModeLandlock:
		if s.LandlockABI == 0 {
			return "the kernel has no Landlock: " + s.LandlockNote
		}
	case ModeBwrap:
		if s.Bwrap == "" {
			return "bubblewrap is not usable: " + s.BwrapNote
		}
	}
	return ""
}

// String describes the support in one line, for logs, status and doctor.
func (s Support) String() string {
	var parts []string
	if s.LandlockABI > 0 {
		parts = append(parts, fmt.Sprintf("landlock ABI %d (enforcing %d)", s.LandlockABI, s.AppliedLandlockABI()))
	} else {
		parts = append(parts, "no landlock ("+s.LandlockNote+")")
	}
	if s.Bwrap != "" {
		parts = append(parts, "bwrap "+s.Bwrap)
	} else {
		parts = append(parts, "no bwrap ("+s.BwrapNote+")")
	}
	if s.UserNS {
		parts = append(parts, "user namespaces")
	} else {
		parts = append(parts, "no user namespaces")
	}
	if s.PidsCgroup {
		parts = append(parts, "pids cgroup")
	}
	return strings.Join(parts, ", ")
}

var detected = sync.OnceValue(func() Support {
	s := probe()
	if exe, err := os.Executable(); err != nil {
		s.HelperNote = err.Error()
	} else {
		s.Helper = exe
	}
	return s
})

// Detect probes the host once (Landlock ABI, bubblewrap, user namespaces)
// and returns the cached result.
func Detect() Support { return detected() }
