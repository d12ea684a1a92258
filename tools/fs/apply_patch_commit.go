package fs

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
)

// commit writes every file the patch changed, each atomically (a
// temporary file renamed over it). When a write fails, the files written
// before it get their old bytes back, new ones are removed with the
// folders made for them, and the error says so: a patch never stays half
// applied unless the roll-back itself fails, which the error then names.
func (p *patch) commit() error {
	var done []*patchFile
	for _, f := range p.order {
		data := f.file.bytes()
		if f.existed && bytes.Equal(data, f.original) {
			continue
		}
		f.madeDirs = missingDirs(f)
		if _, err := p.tool.write(f.loc, data); err != nil {
			rerr := p.rollback(done, f)
			if rerr != nil {
				p.tool.log.Error("apply_patch roll-back failed", "err", rerr)
				return fmt.Errorf("writing %s failed (%w), and putting back the files written before it failed too: %w; check them with read_file", f.shown, err, rerr)
			}
			return fmt.Errorf("writing %s failed (%w); the %d files written before it were restored, so nothing changed", f.shown, err, len(done))
		}
		done = append(done, f)
	}
	return nil
}

// rollback restores the files in done and cleans up after failed, whose
// own write left its target untouched but may have made folders.
func (p *patch) rollback(done []*patchFile, failed *patchFile) error {
	var errs []error
	for i := len(done) - 1; i >= 0; i-- {
		f := done[i]
		if f.existed {
			if _, err := p.tool.write(f.loc, f.original); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", f.shown, err))
			}
			continue
		}
		if err := f.loc.Root.Remove(f.loc.Name); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, fmt.Errorf("%s: %w", f.shown, err))
		}
		errs = append(errs, removeDirs(f))
	}
	if !failed.existed {
		errs = append(errs, removeDirs(failed))
	}
	return errors.Join(errs...)
}

// missingDirs lists the folders above f that do not exist yet, deepest
// first: the ones writing f will create.
func missingDirs(f *patchFile) []string {
	if f.existed {
		return nil
	}
	var out []string
	for d := filepath.Dir(f.loc.Name); d != "." && d != string(filepath.Separator); d = filepath.Dir(d) {
		if _, err := f.loc.Root.Stat(d); !errors.Is(err, fs.ErrNotExist) {
			break
		}
		out = append(out, d)
	}
	return out
}

// removeDirs removes the folders made for f, deepest first; each must be
// empty again.
func removeDirs(f *patchFile) error {
	for _, d := range f.madeDirs {
		if err := f.loc.Root.Remove(d); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("folder %s: %w", d, err)
		}
	}
	return nil
}
