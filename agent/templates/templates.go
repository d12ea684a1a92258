// Package templates owns the workspace templates (AGENTS.md, SOUL.md,
// USER.md, TOOLS.md, HEARTBEAT.md, memory/, skills/) embedded in the binary,
// and Sync, which creates the missing ones in a workspace without ever
// touching a file that exists.
package templates

import (
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

//go:embed files
var files embed.FS

// FS returns the templates, rooted at the workspace root.
func FS() fs.FS {
	sub, err := fs.Sub(files, "files")
	if err != nil {
		panic(err) // the embedded tree is fixed at build time
	}
	return sub
}

// Sync creates every template file and folder missing from workspace and
// returns the workspace-relative paths it created. Existing files are never
// opened for writing, so a user's edits are safe; running Sync twice creates
// nothing the second time.
func Sync(workspace string) ([]string, error) {
	var created []string
	if err := os.MkdirAll(workspace, 0o700); err != nil {
		return nil, fmt.Errorf("workspace %s: %w", workspace, err)
	}
	err := fs.WalkDir(FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == "." {
			return err
		}
		dst := filepath.Join(workspace, filepath.FromSlash(p))
		if d.IsDir() {
			if _, err := os.Stat(dst); errors.Is(err, fs.ErrNotExist) {
				if err := os.MkdirAll(dst, 0o700); err != nil {
					return err
				}
				created = append(created, p+"/")
			}
			return nil
		}
		data, err := fs.ReadFile(FS(), p)
		if err != nil {
			return err
		}
		// O_EXCL: never replace a file, even one created since we looked.
		f, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if errors.Is(err, fs.ErrExist) {
			return nil
		}
		if err != nil {
			return err
		}
		if _, err := f.Write(data); err != nil {
			_ = f.Close()
			return err
		}
		if err := f.Close(); err != nil {
			return err
		}
		created = append(created, p)
		return nil
	})
	if err != nil {
		return created, fmt.Errorf("sync workspace templates into %s: %w", workspace, err)
	}
	return created, nil
}
