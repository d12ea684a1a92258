package main

import (
	"bufio"
	"debug/elf"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
)

// residentSection is how much of one ELF section of the executable a
// process has mapped in.
type residentSection struct {
	Name           string
	Size, Resident int64
	ByModule       []depSize // for .text and .rodata: resident bytes by module
}

// residentSections reads which pages of the executable process pid has
// mapped (the present bit of /proc/<pid>/pagemap) and sums them per
// section of bin, and per module for the sections whose symbols symBin
// (the same build with its symbol table) names. Linux reads page-fault
// "fault-around" windows (64 KB by default, whole large folios sometimes)
// so one touched byte can map many pages; this counts what is mapped.
func residentSections(pid int, bin, symBin string, mods []string) ([]residentSection, error) {
	exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
	if err != nil {
		return nil, err
	}
	type span struct{ start, end uint64 }
	var spans []span
	maps, err := os.Open(fmt.Sprintf("/proc/%d/maps", pid))
	if err != nil {
		return nil, err
	}
	sc := bufio.NewScanner(maps)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 6 || f[5] != exe {
			continue
		}
		lo, hi, _ := strings.Cut(f[0], "-")
		s, _ := strconv.ParseUint(lo, 16, 64)
		e, _ := strconv.ParseUint(hi, 16, 64)
		spans = append(spans, span{s, e})
	}
	maps.Close()
	pm, err := os.Open(fmt.Sprintf("/proc/%d/pagemap", pid))
	if err != nil {
		return nil, err
	}
	defer pm.Close()
	const page = 4096
	present := map[uint64]bool{} // virtual page addresses mapped in
	for _, s := range spans {
		n := (s.end - s.start) / page
		buf := make([]byte, 8*n)
		if _, err := pm.ReadAt(buf, int64(s.start/page*8)); err != nil && err != io.EOF {
			return nil, fmt.Errorf("pagemap: %w", err)
		}
		for i := range n {
			if binary.LittleEndian.Uint64(buf[8*i:])&(1<<63) != 0 {
				present[s.start+i*page] = true
			}
		}
	}

	f, err := elf.Open(bin)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []residentSection
	for _, sec := range f.Sections {
		if sec.Addr == 0 || sec.Type == elf.SHT_NOBITS || sec.Size == 0 {
			continue
		}
		rs := residentSection{Name: sec.Name, Size: int64(sec.Size)}
		for a := sec.Addr &^ (page - 1); a < sec.Addr+sec.Size; a += page {
			if present[a] {
				lo, hi := max(a, sec.Addr), min(a+page, sec.Addr+sec.Size)
				rs.Resident += int64(hi - lo)
			}
		}
		out = append(out, rs)
	}

	// Per module: the symbol table of the unstripped twin, whose sections
	// must sit at the same addresses.
	sf, err := elf.Open(symBin)
	if err != nil {
		return out, nil
	}
	defer sf.Close()
	for _, sec := range f.Sections {
		if sec.Addr == 0 {
			continue // not loaded (.shstrtab)
		}
		twin := sf.Section(sec.Name)
		if twin == nil || twin.Addr != sec.Addr || twin.Size != sec.Size {
			return out, nil // different layout: no attribution
		}
	}
	syms, err := sf.Symbols()
	if err != nil {
		return out, nil
	}
	sort.Slice(mods, func(i, j int) bool { return len(mods[i]) > len(mods[j]) })
	for i := range out {
		if out[i].Name != ".text" && out[i].Name != ".rodata" {
			continue
		}
		sec := f.Section(out[i].Name)
		by := map[string]int64{}
		for _, s := range syms {
			if s.Size == 0 || s.Value < sec.Addr || s.Value >= sec.Addr+sec.Size {
				continue
			}
			var res int64
			for a := s.Value &^ (page - 1); a < s.Value+s.Size; a += page {
				if present[a] {
					lo, hi := max(a, s.Value), min(a+page, s.Value+s.Size)
					res += int64(hi - lo)
				}
			}
			if res == 0 {
				continue
			}
			m := moduleOf(s.Name, mods)
			if m == "" {
				m = "(no package)"
			}
			by[m] += res
		}
		for m, b := range by {
			out[i].ByModule = append(out[i].ByModule, depSize{m, b})
		}
		sort.Slice(out[i].ByModule, func(a, b int) bool { return out[i].ByModule[a].Bytes > out[i].ByModule[b].Bytes })
	}
	return out, nil
}

// residentMarkdown writes what the executable had mapped in at the early
// reading, by section and, for code and read-only data, by module.
func (r *report) residentMarkdown(w func(string, ...any)) {
	if len(r.Resident) == 0 {
		return
	}
	mib := func(b int64) string { return fmt.Sprintf("%.2f MiB", float64(b)/(1<<20)) }
	w("\n## What start-up maps in\n\n")
	w("The executable's pages mapped into the gateway with the trim off, %s after the spawn (the present bits of `/proc/<pid>/pagemap` over its mappings), by ELF section. ", r.Lean.EarlyAt)
	w("The kernel maps file pages in fault-around windows (64 KiB here, a whole large folio at times), so each first touch of a cold spot brings in up to 16 pages: package initialisers spread over the whole text are enough to map most of it.\n\n")
	w("| section | size | mapped in | share |\n|---|---|---|---|\n")
	for _, s := range r.Resident {
		if s.Size < 64<<10 {
			continue
		}
		w("| %s | %s | %s | %.0f%% |\n", s.Name, mib(s.Size), mib(s.Resident), 100*float64(s.Resident)/float64(s.Size))
	}
	for _, s := range r.Resident {
		if len(s.ByModule) == 0 {
			continue
		}
		w("\n`%s` mapped in, by module (top 10):\n\n| module | mapped in |\n|---|---|\n", s.Name)
		for i, m := range s.ByModule {
			if i == 10 {
				break
			}
			w("| %s | %s |\n", m.Module, mib(m.Bytes))
		}
	}
}
