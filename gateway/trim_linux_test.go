package gateway

import (
	"os"
	"strconv"
	"strings"
	"testing"
)

// residentCode sums the resident kB of this binary's read-only mappings.
func residentCode(t *testing.T) int {
	t.Helper()
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		t.Skipf("no /proc/self/smaps: %v", err)
	}
	total, inExe := 0, false
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) >= 6 && strings.Contains(f[0], "-") {
			inExe = f[5] == exe && f[1][1] != 'w'
			continue
		}
		if inExe && len(f) >= 2 && f[0] == "Rss:" {
			kb, _ := strconv.Atoi(f[1])
			total += kb
		}
	}
	return total
}

// touchCode reads every read-only mapping of the executable through
// /proc/self/mem, which faults all of its pages in.
func touchCode(t *testing.T) {
	t.Helper()
	exe, _ := os.Readlink("/proc/self/exe")
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		t.Skipf("no /proc/self/maps: %v", err)
	}
	mem, err := os.Open("/proc/self/mem")
	if err != nil {
		t.Skipf("no /proc/self/mem: %v", err)
	}
	defer mem.Close()
	buf := make([]byte, 1<<20)
	for _, line := range strings.Split(string(maps), "\n") {
		f := strings.Fields(line)
		if len(f) < 6 || f[5] != exe || f[1][1] == 'w' {
			continue
		}
		lo, hi, _ := strings.Cut(f[0], "-")
		start, _ := strconv.ParseInt(lo, 16, 64)
		end, _ := strconv.ParseInt(hi, 16, 64)
		for off := start; off < end; off += int64(len(buf)) {
			n := min(int64(len(buf)), end-off)
			if _, err := mem.ReadAt(buf[:n], off); err != nil {
				t.Fatalf("read %x: %v", off, err)
			}
		}
	}
}

func TestDropCodePagesShrinksResidentCode(t *testing.T) {
	touchCode(t)
	before := residentCode(t)
	n, err := dropCodePages()
	if err != nil {
		t.Fatal(err)
	}
	if n == 0 {
		t.Fatal("no read-only mapping of the executable found")
	}
	after := residentCode(t)
	// The test keeps running, so some pages fault straight back in; most of
	// what start-up touched must be gone.
	if after >= before/2 {
		t.Fatalf("resident code %d kB -> %d kB, want it at least halved", before, after)
	}
	t.Logf("resident code %d kB -> %d kB (%d bytes advised)", before, after, n)
}
