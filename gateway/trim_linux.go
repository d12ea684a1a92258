package gateway

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// dropCodePages unmaps the pages of the gateway's own executable that are
// mapped read-only (code and constant data) from this process, so that what
// stays resident is what the process goes on using, not everything it
// touched while starting. The pages stay in the kernel's page cache and come
// back with a minor fault when needed; nothing is lost, because read-only
// private file mappings never hold modified data. It returns the bytes of
// the mappings advised.
func dropCodePages() (int64, error) {
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		return 0, err
	}
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	type span struct{ start, end uintptr }
	var spans []span
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// 00400000-01633000 r-xp 00000000 fe:00 9978241    /path/to/exe
		fields := strings.Fields(sc.Text())
		if len(fields) < 6 || fields[5] != exe {
			continue
		}
		perms := fields[1]
		if len(perms) < 4 || perms[1] == 'w' || perms[3] != 'p' {
			continue
		}
		lo, hi, ok := strings.Cut(fields[0], "-")
		if !ok {
			continue
		}
		start, err1 := strconv.ParseUint(lo, 16, 64)
		end, err2 := strconv.ParseUint(hi, 16, 64)
		if err1 != nil || err2 != nil || end <= start {
			continue
		}
		spans = append(spans, span{uintptr(start), uintptr(end)})
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	var total int64
	for _, s := range spans {
		if _, _, errno := syscall.Syscall(syscall.SYS_MADVISE, s.start, s.end-s.start, syscall.MADV_DONTNEED); errno != 0 {
			return total, errno
		}
		total += int64(s.end - s.start)
	}
	return total, nil
}
