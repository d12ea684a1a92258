// Package fs holds the file tools: read_file (paged text with line numbers,
// images as image parts), write_file, edit_file (exact, then
// whitespace-tolerant replacement), list_dir, apply_patch (several edits
// across files, all or nothing), grep (regular expressions over file
// contents) and find_files (paths by glob, newest first).
//
// Relative paths are relative to the workspace. With RestrictToWorkspace
// every path is resolved the way the kernel will see it (symlinks included,
// and for files that do not exist yet through their nearest existing
// parent) and must end inside the workspace or one of AllowedDirs. The
// tools then open the resolved path through a handle on that folder
// (os.Root: openat one component at a time, refusing to leave it), so a
// symlink swapped in between the check and the open, say by a command the
// agent runs, cannot send a read or a write outside. Writes go to a
// temporary file beside the target, renamed over it inside the same
// folder.
//
// grep and find_files walk a folder through a handle on it without
// following symlinks, skip what .gitignore files (in the folder, below it
// and above it up to the workspace) and list_dir's clutter list leave out,
// and stop at fixed limits that their output reports.
//
// The tools are safe for concurrent use; concurrent edits of one file are
// last-writer-wins (apply_patch included: it checks a patch against the
// files as they are, then writes; it does not lock them meanwhile).
package fs

import (
	"errors"
	"fmt"
	"log/slog"

	"github.com/nanobot-go/nanobot/internal/option"
	"github.com/nanobot-go/nanobot/tools"
	"github.com/nanobot-go/nanobot/tools/internal/pathguard"
)

// Defaults for Options.
const (
	DefaultMaxReadChars   = 128_000
	DefaultReadLines      = 2000
	DefaultMaxImageBytes  = 10 << 20
	DefaultMaxListEntries = 200
)

// Options configures the file tools. Zero values mean the defaults.
type Options struct {
	// Workspace is the base of relative paths (required).
	Workspace string
	// RestrictToWorkspace refuses paths that resolve outside Workspace and
	// AllowedDirs.
	RestrictToWorkspace bool
	// AllowedDirs are extra folders the tools may use when restricted (for
	// example the media folder where inbound attachments are saved).
	AllowedDirs []string
	// MaxReadChars caps the text one read_file call returns (default 128000).
	MaxReadChars int
	// DefaultReadLines is how many lines read_file returns when the call
	// gives no limit (default 2000).
	DefaultReadLines int
	// MaxImageBytes caps images read_file returns (default 10 MiB).
	MaxImageBytes int64
	// MaxListEntries is list_dir's default entry cap (default 200).
	MaxListEntries int
	// Logger (default slog.Default()).
	Logger *slog.Logger
}

// base is what every file tool shares.
type base struct {
	name  string // the tool's
	opts  Options
	paths *pathguard.Guard
	log   *slog.Logger
}

func newBase(opts Options, tool string) (*base, error) {
	if opts.Workspace == "" {
		return nil, errors.New("fs: workspace is required")
	}
	option.Positive(&opts.MaxReadChars, DefaultMaxReadChars)
	option.Positive(&opts.DefaultReadLines, DefaultReadLines)
	option.Positive(&opts.MaxImageBytes, DefaultMaxImageBytes)
	option.Positive(&opts.MaxListEntries, DefaultMaxListEntries)
	g, err := pathguard.New(opts.Workspace, opts.RestrictToWorkspace, opts.AllowedDirs...)
	if err != nil {
		return nil, fmt.Errorf("fs: %w", err)
	}
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	return &base{name: tool, opts: opts, paths: g, log: log.With("tool", tool)}, nil
}

// newTool builds the file tool called name around its own base.
func newTool[T any](opts Options, name string, wrap func(*base) *T) (*T, error) {
	b, err := newBase(opts, name)
	if err != nil {
		return nil, err
	}
	return wrap(b), nil
}

// Name implements tools.Tool for every file tool.
func (b *base) Name() string { return b.name }

// open checks the model's path and returns the folder handle to work
// through; the caller closes loc.Root.
func (b *base) open(p string) (*pathguard.Location, error) {
	if p == "" {
		return nil, errors.New("path is empty")
	}
	return b.paths.Open(p)
}

func (b *base) restrictNote() string {
	if b.opts.RestrictToWorkspace {
		return " Paths must stay inside the workspace."
	}
	return ""
}

// All returns every file tool sharing opts: read_file, write_file,
// edit_file, list_dir, apply_patch, grep and find_files.
func All(opts Options) ([]tools.Tool, error) {
	builders := []func(Options) (tools.Tool, error){
		func(o Options) (tools.Tool, error) { return NewReadFile(o) },
		func(o Options) (tools.Tool, error) { return NewWriteFile(o) },
		func(o Options) (tools.Tool, error) { return NewEditFile(o) },
		func(o Options) (tools.Tool, error) { return NewListDir(o) },
		func(o Options) (tools.Tool, error) { return NewApplyPatch(o) },
		func(o Options) (tools.Tool, error) { return NewGrep(o) },
		func(o Options) (tools.Tool, error) { return NewFindFiles(o) },
	}
	out := make([]tools.Tool, 0, len(builders))
	for _, build := range builders {
		t, err := build(opts)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}
