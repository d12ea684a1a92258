package fs

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/nanobot-go/nanobot/tools"
	"github.com/nanobot-go/nanobot/tools/internal/pathguard"
)

// WriteFile is the write_file tool.
type WriteFile struct{ *base }

var _ tools.Tool = (*WriteFile)(nil)

// NewWriteFile returns the write_file tool.
func NewWriteFile(opts Options) (*WriteFile, error) {
	return newTool(opts, "write_file", func(b *base) *WriteFile { return &WriteFile{b} })
}

func (t *WriteFile) Description() string {
	return "Create or overwrite a file with the given content, creating missing parent folders. " +
		"It replaces the whole file: to change part of an existing file use edit_file." + t.restrictNote()
}

func (t *WriteFile) Parameters() map[string]any {
	return map[string]any{
		"type": "object",
		"properties": map[string]any{
			"path":    map[string]any{"type": "string", "minLength": 1, "description": "File path, relative to the workspace or absolute."},
			"content": map[string]any{"type": "string", "description": "The complete new content of the file."},
		},
		"required": []any{"path", "content"},
	}
}

func (t *WriteFile) Execute(_ context.Context, args map[string]any) (tools.Result, error) {
	a := tools.Args(args)
	loc, err := t.open(a.String("path"))
	if err != nil {
		return tools.Result{}, err
	}
	defer loc.Root.Close()
	content := a.String("content")
	existed, err := writeKeepingMode(loc, []byte(content))
	if err != nil {
		return tools.Result{}, err
	}
	verb := "Created"
	if existed {
		verb = "Overwrote"
	}
	return tools.Result{Content: fmt.Sprintf("%s %s (%d bytes).", verb, t.paths.Display(loc.Real), len(content))}, nil
}

// writeKeepingMode writes data to loc atomically, creating parent folders,
// and keeps the permissions of a file it replaces. It reports whether the
// file existed. Everything happens through loc.Root: the folders, the
// temporary file beside the target and the rename over it.
func writeKeepingMode(loc *pathguard.Location, data []byte) (existed bool, err error) {
	mode := fs.FileMode(0o644)
	fi, err := loc.Root.Stat(loc.Name)
	switch {
	case err == nil && fi.IsDir():
		return true, fmt.Errorf("%s is a folder, not a file", loc.Real)
	case err == nil:
		existed, mode = true, fi.Mode().Perm()
	case !errors.Is(err, fs.ErrNotExist):
		return false, loc.Check(err)
	}
	dir := filepath.Dir(loc.Name)
	if err := loc.Root.MkdirAll(dir, 0o755); err != nil {
		return existed, fmt.Errorf("create parent folders: %w", loc.Check(err))
	}
	tmp, f, err := createTemp(loc.Root, dir, filepath.Base(loc.Name), mode)
	if err != nil {
		return existed, loc.Check(err)
	}
	_, err = f.Write(data)
	if err == nil && existed {
		err = f.Chmod(mode) // the create was subject to the umask
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = loc.Root.Rename(tmp, loc.Name)
	}
	if err != nil {
		_ = loc.Root.Remove(tmp)
		return existed, loc.Check(err)
	}
	return existed, nil
}

// createTemp creates a new, hidden file in dir (relative to root) for a
// write to name, retrying on a name clash.
func createTemp(root pathguard.Root, dir, name string, mode fs.FileMode) (string, *os.File, error) {
	var b [6]byte
	for range 10 {
		_, _ = rand.Read(b[:])
		tmp := filepath.Join(dir, "."+name+".tmp-"+hex.EncodeToString(b[:]))
		f, err := root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		return tmp, f, err
	}
	return "", nil, fmt.Errorf("create a temporary file for %s: too many name clashes", name)
}
