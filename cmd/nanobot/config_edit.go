package main

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"

	"github.com/nanobot-go/nanobot/configs"
	"github.com/nanobot-go/nanobot/internal/atomicfile"
)

// editConfig changes one setting in the config file. fn gets the file as
// it is now and returns the dotted path to set and its value, or path ""
// to leave the file alone. Only that value's bytes are rewritten
// (configs.PatchJSON): the user's layout, key order, ${VAR} references and
// keys this build does not know stay as written. The file is replaced
// atomically (mode 0600), under its lock, so a concurrent edit is not
// lost.
func (a *app) editConfig(fn func(raw []byte) (path string, value any, err error)) error {
	file := a.loaded.Path
	if file == "" {
		return fmt.Errorf("the gateway runs without a config file")
	}
	err := atomicfile.Update(file, 0o600, func(old []byte) ([]byte, error) {
		path, value, err := fn(old)
		if err != nil {
			return nil, err
		}
		if path == "" {
			return nil, errUnchanged
		}
		return configs.PatchJSON(old, path, value)
	})
	switch {
	case errors.Is(err, errUnchanged):
		return nil
	case err != nil:
		return fmt.Errorf("%s: %w", file, err)
	}
	return nil
}

// errUnchanged ends an editConfig that has nothing to write.
var errUnchanged = errors.New("unchanged")

// saveConfigData writes data as the config file at path: only if it loads
// as the gateway would load it, under the file's lock, and only if nobody
// changed the file since it was read as raw (the gateway saving an
// approved command, the workbench's settings): their change is not
// overwritten. The previous file is kept as .bak; the new one is 0600.
func saveConfigData(path string, existed bool, raw, data []byte) error {
	var before []byte
	if existed {
		before = raw
	}
	if err := validateConfig(path, before, data); err != nil {
		return fmt.Errorf("the edited config does not load, so it was not saved: %w", err)
	}
	err := atomicfile.Update(path, 0o600, func(now []byte) ([]byte, error) {
		if existed && !bytes.Equal(now, raw) || !existed && len(now) > 0 {
			return nil, errChangedMeanwhile
		}
		if existed {
			if err := atomicfile.Write(path+".bak", raw, 0o600); err != nil {
				return nil, err
			}
		}
		return data, nil
	})
	if err != nil {
		return fmt.Errorf("%s not saved: %w", path, err)
	}
	return nil
}

// validateConfig loads data as the gateway would, from a file beside path,
// and refuses it when it does not load, or when it enables a channel the
// start could not build that the file as it was (before; nil: none) did
// not: an edit must not stop the gateway, but need not fix what it found.
func validateConfig(path string, before, data []byte) error {
	after, err := loadBeside(path, data)
	if err != nil {
		return err
	}
	problems := channelProblems(&after.Config)
	if len(problems) > 0 && before != nil {
		if was, err := loadBeside(path, before); err == nil {
			for name := range channelProblems(&was.Config) {
				delete(problems, name)
			}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(problems)) {
		return problems[name] // the gateway would not start with it
	}
	return nil
}

// loadBeside loads data as the config file would be loaded, from a
// temporary file in path's folder (relative paths mean the same).
func loadBeside(path string, data []byte) (*configs.Loaded, error) {
	f, err := os.CreateTemp(filepath.Dir(path), ".config-check-*.json")
	if err != nil {
		return nil, err
	}
	defer os.Remove(f.Name())
	if _, err := f.Write(data); err != nil {
		f.Close()
		return nil, err
	}
	if err := f.Close(); err != nil {
		return nil, err
	}
	return configs.Load(configs.Options{Path: f.Name(), Platforms: platformTypes()})
}
