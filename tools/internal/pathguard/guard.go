// Package pathguard resolves paths the way the kernel will (symlinks
// followed component by component, ".." applied after them) and checks that
// the result stays inside the allowed roots. The file and shell tools share
// it so "restrictToWorkspace" means the same thing everywhere.
//
// A check alone loses a race: between the check and a later open by name,
// a command running in the workspace can swap a folder for a symlink out of
// it. So the in-process tools use Open, which checks and then hands back a
// handle on the allowed folder (an os.Root, resolving each component with
// openat and refusing to leave it) and the name to use below it; every
// operation on the target goes through that handle.
//
// It is application-level, not confinement of processes: tools/sandbox is
// where kernel-enforced limits belong. A Guard is immutable and safe for
// concurrent use; so is a Location's Root, which its user closes.
package pathguard

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// maxLinks bounds symlink expansion (the kernel's ELOOP limit is 40).
const maxLinks = 40

// OutsideError reports a path that resolves outside the allowed roots.
type OutsideError struct {
	Path     string // as given
	Resolved string // after symlinks
	Roots    []string
}

func (e *OutsideError) Error() string {
	via := ""
	if e.Resolved != e.Path {
		via = fmt.Sprintf(" (it resolves to %s)", e.Resolved)
	}
	where := "the workspace " + e.Roots[0]
	if len(e.Roots) > 1 {
		where += " and the allowed folders " + strings.Join(e.Roots[1:], ", ")
	}
	return fmt.Sprintf("access denied: %q is outside %s%s; restrictToWorkspace is on, so stay inside", e.Path, where, via)
}

// Guard resolves and checks paths. It is immutable and safe for concurrent
// use.
type Guard struct {
	workspace string
	home      string
	restrict  bool
	roots     []string
}

// New returns a guard for workspace. With restrict off, Resolve still
// resolves but never refuses. extra lists additional allowed roots. When
// restricted, "~" means the workspace (the shell tool sets HOME to it).
func New(workspace string, restrict bool, extra ...string) (*Guard, error) {
	if workspace == "" {
		return nil, errors.New("pathguard: workspace is empty")
	}
	abs, err := filepath.Abs(workspace)
	if err != nil {
		return nil, fmt.Errorf("pathguard: workspace: %w", err)
	}
	ws, err := Real(abs)
	if err != nil {
		return nil, fmt.Errorf("pathguard: workspace: %w", err)
	}
	g := &Guard{workspace: ws, restrict: restrict, roots: []string{ws}}
	for _, d := range extra {
		if d == "" {
			continue
		}
		a, err := filepath.Abs(d)
		if err != nil {
			return nil, fmt.Errorf("pathguard: allowed dir %q: %w", d, err)
		}
		r, err := Real(a)
		if err != nil {
			return nil, fmt.Errorf("pathguard: allowed dir %q: %w", d, err)
		}
		g.roots = append(g.roots, r)
	}
	g.home = ws
	if !restrict {
		if h, err := os.UserHomeDir(); err == nil {
			g.home = h
		}
	}
	return g, nil
}

// Workspace is the resolved workspace folder.
func (g *Guard) Workspace() string { return g.workspace }

// Home is what "~" expands to.
func (g *Guard) Home() string { return g.home }

// Restricted reports whether paths outside the roots are refused.
func (g *Guard) Restricted() bool { return g.restrict }

// Resolve resolves p relative to the workspace.
func (g *Guard) Resolve(p string) (string, error) { return g.ResolveFrom(g.workspace, p) }

// ResolveFrom resolves p relative to base, expanding a leading "~", and
// returns the real path. base must itself be a real path (the workspace, or
// a result of Resolve): it is not resolved again. With restrict on, a
// result outside every root is an *OutsideError.
func (g *Guard) ResolveFrom(base, p string) (string, error) {
	if p == "" {
		p = "."
	}
	if p == "~" || strings.HasPrefix(p, "~/") {
		p = g.home + p[1:]
	}
	var real string
	var err error
	if filepath.IsAbs(p) {
		real, err = Real(p)
	} else {
		real, err = realFrom(base, p)
		p = base + string(filepath.Separator) + p
	}
	if err != nil {
		return "", err
	}
	if g.restrict && !g.Inside(real) {
		return "", &OutsideError{Path: displayInput(p, base), Resolved: real, Roots: g.roots}
	}
	return real, nil
}

func displayInput(p, base string) string {
	if rel, ok := strings.CutPrefix(p, base+string(filepath.Separator)); ok {
		return rel
	}
	return p
}

// Inside reports whether the real path real is one of the roots or below one.
func (g *Guard) Inside(real string) bool {
	for _, r := range g.roots {
		if within(r, real) {
			return true
		}
	}
	return false
}

// Display shows real relative to the workspace when it is inside it.
func (g *Guard) Display(real string) string {
	if real == g.workspace {
		return "."
	}
	if within(g.workspace, real) {
		rel, err := filepath.Rel(g.workspace, real)
		if err == nil {
			return rel
		}
	}
	return real
}

func within(root, p string) bool {
	if root == string(filepath.Separator) {
		return true
	}
	return p == root || strings.HasPrefix(p, root+string(filepath.Separator))
}

// Real resolves the absolute path p as the kernel would: each component in
// turn, symlinks expanded where they occur and ".." applied to what they
// resolved to. The part of p that does not exist yet is appended lexically,
// so a file about to be created resolves through its nearest existing
// parent.
func Real(p string) (string, error) {
	if !filepath.IsAbs(p) {
		return "", fmt.Errorf("pathguard: %q is not absolute", p)
	}
	vol := filepath.VolumeName(p)
	return realFrom(vol+string(filepath.Separator), p[len(vol):])
}

// realFrom resolves the relative path rel on top of the real folder start.
func realFrom(start, rel string) (string, error) {
	sep := string(filepath.Separator)
	pending := split(rel)
	resolved := start
	links := 0
	for len(pending) > 0 {
		c := pending[0]
		pending = pending[1:]
		switch c {
		case ".":
			continue
		case "..":
			resolved = filepath.Dir(resolved)
			continue
		}
		next := filepath.Join(resolved, c)
		fi, err := os.Lstat(next)
		if err != nil {
			// Missing (or unreadable): nothing below can be a symlink we
			// could follow, so the rest is lexical.
			return filepath.Join(append([]string{next}, pending...)...), nil
		}
		if fi.Mode()&os.ModeSymlink == 0 {
			resolved = next
			continue
		}
		links++
		if links > maxLinks {
			return "", fmt.Errorf("pathguard: %s: too many levels of symbolic links", filepath.Join(start, rel))
		}
		target, err := os.Readlink(next)
		if err != nil {
			return "", fmt.Errorf("pathguard: %w", err)
		}
		if filepath.IsAbs(target) {
			tv := filepath.VolumeName(target)
			resolved = tv + sep
			target = target[len(tv):]
		}
		pending = append(split(target), pending...)
	}
	return resolved, nil
}

func split(p string) []string {
	var out []string
	for _, c := range strings.Split(filepath.ToSlash(p), "/") {
		if c != "" {
			out = append(out, c)
		}
	}
	return out
}
