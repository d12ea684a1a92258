package skills

import (
	"bytes"
	"embed"
	"errors"
	"io/fs"
	"os"
	"path"
	"path/filepath"

	"github.com/nanobot-go/nanobot/internal/atomicfile"
)

//go:embed builtin
var embedded embed.FS

func builtinFS() fs.FS {
	sub, _ := fs.Sub(embedded, "builtin") // fails only for an invalid path name
	return sub
}

// BuiltinDir is where the readable copies of the built-in skills live,
// relative to the workspace.
const BuiltinDir = ".nanobot/skills"

// loadBuiltins parses the built-in skills and copies each folder to
// <workspace>/.nanobot/skills/<name>/, writing only files whose content
// differs, so the model can read_file them like workspace skills.
func (l *Loader) loadBuiltins() (map[string]*entry, []Problem) {
	out := map[string]*entry{}
	var problems []Problem
	dirents, err := fs.ReadDir(l.opts.Builtin, ".")
	if err != nil {
		return out, []Problem{{Path: "builtin", Err: err}}
	}
	for _, d := range dirents {
		if !d.IsDir() {
			continue
		}
		name := d.Name()
		src := path.Join(name, FileName)
		data, err := fs.ReadFile(l.opts.Builtin, src)
		if errors.Is(err, fs.ErrNotExist) {
			continue // not a skill folder
		}
		if err != nil {
			problems = append(problems, Problem{Path: "builtin/" + src, Err: err})
			continue
		}
		s, ok, perr := build(name, data)
		if perr != nil {
			problems = append(problems, Problem{Path: "builtin/" + src, Err: perr})
		}
		if !ok {
			continue
		}
		s.Source = SourceBuiltin
		if l.opts.Workspace != "" {
			dst := filepath.Join(l.opts.Workspace, filepath.FromSlash(BuiltinDir), name)
			if err := materialize(l.opts.Builtin, name, dst); err != nil {
				l.log.Warn("cannot copy built-in skill into the workspace", "skill", name, "err", err)
				problems = append(problems, Problem{Path: "builtin/" + src, Err: err})
			} else {
				s.Path = filepath.Join(dst, FileName)
			}
		}
		out[name] = &entry{skill: s, ok: true}
	}
	return out, problems
}

// materialize copies the tree fsys/dir to dst, leaving files that already
// hold the same content untouched (their mtime too).
func materialize(fsys fs.FS, dir, dst string) error {
	return fs.WalkDir(fsys, dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, filepath.FromSlash(p))
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		data, err := fs.ReadFile(fsys, p)
		if err != nil {
			return err
		}
		if old, err := os.ReadFile(target); err == nil && bytes.Equal(old, data) {
			return nil
		} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return writeAtomic(target, data)
	})
}

func writeAtomic(target string, data []byte) error {
	return atomicfile.Write(target, data, 0o644)
}
