package skills

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/nanobot-go/nanobot/internal/atomicfile"
)

// LockName is the lock file of registry-installed skills, inside the
// workspace's skills/ folder. Its leading dot keeps the loader from taking
// it for a skill.
const LockName = ".lock.json"

// SourceRegistry marks a skill installed from a registry and pinned in the
// lock file.
const SourceRegistry = "registry"

// ErrTampered is the Problem of a registry-installed skill whose files no
// longer hash to what the lock file recorded; such a skill is not loaded.
var ErrTampered = errors.New("files differ from the installed version (skills/.lock.json); reinstall it with `nanobot skills install` or remove it")

// Lock is the content of skills/.lock.json.
type Lock struct {
	// Version is the format of the file (1).
	Version int `json:"version"`
	// Skills are the installed skills by folder name.
	Skills map[string]Locked `json:"skills"`
}

// Locked pins one installed skill.
type Locked struct {
	// Registry names the registry it came from (skills.registries[].name).
	Registry string `json:"registry"`
	// Slug is the skill's name in that registry.
	Slug string `json:"slug"`
	// Version is the installed version.
	Version string `json:"version"`
	// ArchiveSHA256 is the hex sha256 of the downloaded archive.
	ArchiveSHA256 string `json:"archiveSha256"`
	// TreeSHA256 is TreeHash of the extracted folder, checked on every load.
	TreeSHA256 string `json:"treeSha256"`
	// InstalledAt is when it was installed or last updated.
	InstalledAt time.Time `json:"installedAt"`
}

// LockPath is the lock file of the skills folder dir.
func LockPath(dir string) string { return filepath.Join(dir, LockName) }

// ReadLock reads the lock file of the skills folder dir; a missing file is
// an empty lock.
func ReadLock(dir string) (Lock, error) {
	data, err := os.ReadFile(LockPath(dir))
	if errors.Is(err, fs.ErrNotExist) {
		return Lock{Version: 1, Skills: map[string]Locked{}}, nil
	}
	if err != nil {
		return Lock{}, err
	}
	return parseLock(data)
}

func parseLock(data []byte) (Lock, error) {
	var l Lock
	if err := json.Unmarshal(data, &l); err != nil {
		return Lock{}, fmt.Errorf("%s does not parse: %w", LockName, err)
	}
	if l.Skills == nil {
		l.Skills = map[string]Locked{}
	}
	if l.Version == 0 {
		l.Version = 1
	}
	return l, nil
}

// UpdateLock changes the lock file of the skills folder dir atomically,
// holding a lock against other writers.
func UpdateLock(dir string, fn func(*Lock) error) error {
	return atomicfile.Update(LockPath(dir), 0o644, func(old []byte) ([]byte, error) {
		l := Lock{Version: 1, Skills: map[string]Locked{}}
		if len(old) > 0 {
			var err error
			if l, err = parseLock(old); err != nil {
				return nil, err
			}
		}
		if err := fn(&l); err != nil {
			return nil, err
		}
		out, err := json.MarshalIndent(l, "", "  ")
		return append(out, '\n'), err
	})
}

// TreeHash is the hex sha256 of a folder's content: every regular file's
// slash path and content hash, and every symlink's path and target, in path
// order. Modes and times are not part of it.
func TreeHash(dir string) (string, error) {
	files, err := TreeFiles(dir)
	if err != nil {
		return "", err
	}
	return HashFiles(files), nil
}

// HashFiles is TreeHash of files as returned by TreeFiles.
func HashFiles(files map[string]string) string {
	paths := make([]string, 0, len(files))
	for p := range files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	h := sha256.New()
	for _, p := range paths {
		fmt.Fprintf(h, "%s\x00%s\n", p, files[p])
	}
	return hex.EncodeToString(h.Sum(nil))
}

// TreeFiles maps each file under dir (slash path) to its content hash, or
// "symlink:<target>" for a symlink.
func TreeFiles(dir string) (map[string]string, error) {
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		rel = filepath.ToSlash(rel)
		switch {
		case d.IsDir():
			return nil
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(path)
			if err != nil {
				return err
			}
			out[rel] = "symlink:" + filepath.ToSlash(target)
		case d.Type().IsRegular():
			sum, err := fileHash(path)
			if err != nil {
				return err
			}
			out[rel] = sum
		default:
			out[rel] = "special:" + d.Type().String()
		}
		return nil
	})
	return out, err
}

func fileHash(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
