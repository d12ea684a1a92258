package fs

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/nanobot-go/nanobot/tools"
)

// WriteFile is the write_file tool.
type WriteFile struct{ *base }

var _ tools.Tool = (*WriteFile)(nil)

// NewWriteFile returns the write_file tool.
func NewWriteFile(opts Options) (*WriteFile, error) {
	b, err := newBase(opts, "write_file")
	if err != nil {
		return nil, err
	}
	return &WriteFile{b}, nil
}

func (t *WriteFile) Name() string { return "write_file" }

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
	p, err := t.resolve(a.String("path"))
	if err != nil {
		return tools.Result{}, err
	}
	content := a.String("content")
	existed, err := writeKeepingMode(p, []byte(content))
	if err != nil {
		return tools.Result{}, err
	}
	verb := "Created"
	if existed {
		verb = "Overwrote"
	}
	return tools.Result{Content: fmt.Sprintf("%s %s (%d bytes).", verb, t.paths.Display(p), len(content))}, nil
}

// writeKeepingMode writes data to p, creating parent folders, and keeps the
// permissions of a file it replaces. It reports whether p existed.
func writeKeepingMode(p string, data []byte) (existed bool, err error) {
	mode := fs.FileMode(0o644)
	fi, err := os.Stat(p)
	switch {
	case err == nil && fi.IsDir():
		return true, fmt.Errorf("%s is a folder, not a file", p)
	case err == nil:
		existed, mode = true, fi.Mode().Perm()
	case !errors.Is(err, fs.ErrNotExist):
		return false, err
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return existed, fmt.Errorf("create parent folders: %w", err)
	}
	if err := os.WriteFile(p, data, mode); err != nil {
		return existed, err
	}
	return existed, nil
}
