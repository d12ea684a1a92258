package gateway

import (
	"bufio"
	"debug/elf"
	"errors"
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
// the mappings advised. Pages the loader wrote (RELRO: the GOT and other
// relocated data of a binary linked with cgo or as PIE) are left alone:
// dropping them would bring back the unrelocated file contents.
func dropCodePages() (int64, error) {
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		return 0, err
	}
	relro, dyn, err := relroRanges()
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
	var bias uintptr // load address of a position-independent executable
	biasKnown := !dyn
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
		if !biasKnown && fields[2] == "00000000" {
			bias, biasKnown = uintptr(start), true
		}
		if !biasKnown {
			return 0, errors.New("cannot place a position-independent executable's mappings")
		}
		overlaps := false
		for _, r := range relro {
			if uintptr(start) < r.end+bias && r.start+bias < uintptr(end) {
				overlaps = true
			}
		}
		if !overlaps {
			spans = append(spans, span{uintptr(start), uintptr(end)})
		}
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

type addrRange struct{ start, end uintptr }

// relroRanges returns the page-rounded PT_GNU_RELRO ranges of the running
// executable (link addresses) and whether it is position-independent.
func relroRanges() ([]addrRange, bool, error) {
	f, err := elf.Open("/proc/self/exe")
	if err != nil {
		return nil, false, err
	}
	defer f.Close()
	page := uint64(os.Getpagesize())
	var out []addrRange
	var firstLoad uint64
	haveLoad := false
	for _, p := range f.Progs {
		switch p.Type {
		case elf.PT_LOAD:
			if !haveLoad {
				firstLoad, haveLoad = p.Vaddr&^(page-1), true
			}
		case elf.PT_GNU_RELRO:
			out = append(out, addrRange{uintptr(p.Vaddr &^ (page - 1)), uintptr((p.Vaddr + p.Memsz + page - 1) &^ (page - 1))})
		}
	}
	dyn := f.Type == elf.ET_DYN
	if dyn && firstLoad != 0 {
		// Link addresses of a PIE start at firstLoad; the bias found in
		// /proc/self/maps is the load address of offset 0.
		for i := range out {
			out[i].start -= uintptr(firstLoad)
			out[i].end -= uintptr(firstLoad)
		}
	}
	return out, dyn, nil
}
