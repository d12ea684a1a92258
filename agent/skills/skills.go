// Package skills loads skills: folders with a SKILL.md (YAML frontmatter,
// then Markdown instructions, plus optional resources) that teach the agent
// how to use its tools for a kind of task.
//
// Skills come from the workspace's skills/ folder and from the built-ins
// embedded in the binary; a workspace skill replaces a built-in one of the
// same name. Skills marked "always: true" go into the system prompt whole
// (AlwaysOn); every other skill is listed in a catalogue (Index) with its
// description and a path the model opens with read_file when it needs the
// skill. Built-ins are copied to <workspace>/.nanobot/skills/<name>/ for that,
// so read_file reaches them even when it is confined to the workspace.
//
// A Loader rescans on every call, so a skill added or edited while the
// gateway runs is used on the next message. Rescans are cheap: a SKILL.md is
// read again only when its size or modification time changed. Output is
// sorted by name and depends only on the files and the environment, so the
// system prompt stays byte-stable between turns. A broken SKILL.md never
// breaks the prompt: it is skipped or loaded leniently, logged once, and
// reported by Problems.
//
// Skills installed from a registry (see package registry) are pinned in
// skills/.lock.json with a hash of their extracted files. The loader checks
// that hash on every scan (files are re-read whenever a size, mode or
// modification time under the folder changed) and skips a skill whose files
// no longer match, with a warning and a Problem wrapping ErrTampered.
//
// Options.Disabled (agents.defaults.disabledSkills) and Options.Only (an
// agent's skills list) hide skills from the prompt; All still lists them,
// with Off saying why. SetDisabled changes the disabled set while running.
//
// A Loader is safe for concurrent use.
package skills

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"
)

// FileName is the manual of a skill folder.
const FileName = "SKILL.md"

// Sources of a skill.
const (
	SourceWorkspace = "workspace"
	SourceBuiltin   = "builtin"
)

// Options configures a Loader. The zero value of every field but Workspace
// is usable.
type Options struct {
	// Workspace holds skills/ (user skills) and .nanobot/skills/ (the
	// readable copies of the built-ins).
	Workspace string
	// Logger receives warnings about broken skills (default: discard).
	Logger *slog.Logger
	// LookPath finds a required binary (default exec.LookPath).
	LookPath func(file string) (string, error)
	// LookupEnv reads a required environment variable (default
	// os.LookupEnv). A variable that is set but empty counts as missing.
	LookupEnv func(key string) (string, bool)
	// GOOS is the platform matched against a skill's os list (default
	// runtime.GOOS).
	GOOS string
	// Builtin is the tree of built-in skills, one folder per skill (default:
	// the embedded built-ins). Tests pass their own.
	Builtin fs.FS
	// NoBuiltin disables built-in skills.
	NoBuiltin bool
	// Disabled names skills left out of the prompt (disabledSkills).
	Disabled []string
	// Only, when not nil, is the only skills this agent uses (an agent's
	// skills list); the others are left out of the prompt.
	Only []string
}

// Skill is one loaded skill.
type Skill struct {
	Name        string
	Description string
	// Path is the SKILL.md the model reads with read_file. For a built-in it
	// is the copy under .nanobot/skills, or "" if that could not be written.
	Path   string
	Source string // SourceWorkspace, SourceRegistry or SourceBuiltin
	// Version is the installed version of a registry skill.
	Version string
	// Off says why the skill is left out of the prompt ("disabled", "not
	// in this agent's skills"); "" when it is used.
	Off      string
	Always   bool
	Homepage string
	// Body is the Markdown instructions, frontmatter stripped.
	Body string
	// Missing lists unmet requirements, "bin:gh" or "env:GH_TOKEN"; a skill
	// with any is unavailable.
	Missing []string
	Bins    []string
	Env     []string
	OS      []string
}

// Available reports whether every requirement of the skill is met.
func (s Skill) Available() bool { return len(s.Missing) == 0 }

// Problem is a SKILL.md that could not be loaded as written.
type Problem struct {
	Path string
	Err  error
}

func (p Problem) Error() string { return p.Path + ": " + p.Err.Error() }

// Loader finds and parses skills.
type Loader struct {
	opts      Options
	log       *slog.Logger
	userDir   string
	builtins  map[string]*entry // parsed once; the embedded tree never changes
	builtinPb []Problem

	mu    sync.Mutex
	cache map[string]*entry // workspace SKILL.md path -> last parse
	paths pathSearches      // guarded by mu
	// keepPaths is set when LookPath is exec.LookPath: its answers are
	// kept between scans while PATH's folders do not change.
	keepPaths bool
	disabled  map[string]bool        // guarded by mu
	only      map[string]bool        // nil: every skill
	lock      lockCache              // guarded by mu
	verified  map[string]treeVerdict // skill folder -> last check; guarded by mu
}

// entry is a parsed SKILL.md and the file version it came from.
type entry struct {
	skill   Skill // requirements not yet checked
	ok      bool  // false: unusable, skipped
	problem error
	mod     time.Time
	size    int64
}

// New returns a Loader and copies the built-in skills into the workspace
// (only files whose content differs are written). Failing to copy is not
// fatal: the built-in is listed without a path and the failure is a Problem.
func New(opts Options) *Loader {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	keepPaths := opts.LookPath == nil
	if opts.LookPath == nil {
		opts.LookPath = exec.LookPath
	}
	if opts.LookupEnv == nil {
		opts.LookupEnv = os.LookupEnv
	}
	if opts.GOOS == "" {
		opts.GOOS = runtime.GOOS
	}
	if opts.Builtin == nil {
		opts.Builtin = builtinFS()
	}
	l := &Loader{
		opts:      opts,
		log:       opts.Logger.With("component", "skills"),
		userDir:   filepath.Join(opts.Workspace, "skills"),
		cache:     map[string]*entry{},
		keepPaths: keepPaths,
		disabled:  set(opts.Disabled),
		verified:  map[string]treeVerdict{},
	}
	if opts.Only != nil {
		l.only = set(opts.Only)
	}
	if !opts.NoBuiltin {
		l.builtins, l.builtinPb = l.loadBuiltins()
	}
	return l
}

// Dir is the workspace folder of user skills.
func (l *Loader) Dir() string { return l.userDir }

// Skills rescans and returns every skill for this platform that the agent
// uses, sorted by name, workspace skills replacing built-ins of the same
// name.
func (l *Loader) Skills() []Skill {
	all, _ := l.scan()
	used := all[:0]
	for _, s := range all {
		if s.Off == "" {
			used = append(used, s)
		}
	}
	return used
}

// All is Skills with the disabled ones too (their Off set).
func (l *Loader) All() []Skill {
	all, _ := l.scan()
	return all
}

// SetDisabled replaces the disabled skills (a /skill disable that was saved
// to the config applies at once).
func (l *Loader) SetDisabled(names []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.disabled = set(names)
}

func set(names []string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}

// Problems rescans and returns the SKILL.md files that could not be loaded
// as written, sorted by path.
func (l *Loader) Problems() []Problem {
	_, problems := l.scan()
	return problems
}

// Get returns the skill called name, if there is one (disabled or not).
func (l *Loader) Get(name string) (Skill, bool) {
	for _, s := range l.All() {
		if s.Name == name {
			return s, true
		}
	}
	return Skill{}, false
}

// AlwaysOn returns the instructions of the available always-on skills, for
// the system prompt. An always-on skill with unmet requirements is listed
// in Index instead, where the model can see why.
func (l *Loader) AlwaysOn() string {
	on, _ := l.Prompt()
	return on
}

// Index returns the catalogue of the skills not in AlwaysOn:
//
//	<skills>
//	  <skill name="github" available="false" path="/ws/.nanobot/skills/github/SKILL.md">
//	    <description>Work with GitHub through the gh CLI.</description>
//	    <missing>bin:gh</missing>
//	  </skill>
//	</skills>
//
// It is empty when there are no such skills.
func (l *Loader) Index() string {
	_, idx := l.Prompt()
	return idx
}

// Prompt returns AlwaysOn and Index from one scan: the system prompt asks
// for both on every turn.
func (l *Loader) Prompt() (alwaysOn, index string) {
	skills := l.Skills()
	return alwaysOnText(skills), indexText(skills)
}

func alwaysOnText(skills []Skill) string {
	var b strings.Builder
	for _, s := range skills {
		if !s.Always || !s.Available() {
			continue
		}
		if b.Len() > 0 {
			b.WriteString("\n\n")
		}
		fmt.Fprintf(&b, "### Skill: %s\n\n%s", s.Name, s.Body)
	}
	return b.String()
}

func indexText(skills []Skill) string {
	var b strings.Builder
	for _, s := range skills {
		if s.Always && s.Available() {
			continue
		}
		if b.Len() == 0 {
			b.WriteString("<skills>\n")
		}
		fmt.Fprintf(&b, "  <skill name=\"%s\" available=\"%t\"", escape(s.Name), s.Available())
		if s.Path != "" {
			fmt.Fprintf(&b, " path=\"%s\"", escape(s.Path))
		}
		b.WriteString(">\n")
		fmt.Fprintf(&b, "    <description>%s</description>\n", escape(s.Description))
		if len(s.Missing) > 0 {
			fmt.Fprintf(&b, "    <missing>%s</missing>\n", escape(strings.Join(s.Missing, ", ")))
		}
		b.WriteString("  </skill>\n")
	}
	if b.Len() == 0 {
		return ""
	}
	b.WriteString("</skills>")
	return b.String()
}

var xmlEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;", "\n", " ")

func escape(s string) string { return xmlEscaper.Replace(s) }

// scan reads the workspace folder (stat-based cache), merges the built-ins
// and checks requirements.
func (l *Loader) scan() ([]Skill, []Problem) {
	l.mu.Lock()
	defer l.mu.Unlock()

	byName := map[string]*entry{}
	for name, e := range l.builtins {
		byName[name] = e
	}
	problems := append([]Problem(nil), l.builtinPb...)

	dirents, err := os.ReadDir(l.userDir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		problems = append(problems, Problem{Path: l.userDir, Err: err})
	}
	lock, lockErr := l.lock.read(l.userDir)
	if lockErr != nil {
		problems = append(problems, Problem{Path: LockPath(l.userDir), Err: lockErr})
	}
	seen := make(map[string]bool, len(dirents))
	for _, d := range dirents {
		name := d.Name()
		if strings.HasPrefix(name, ".") {
			continue
		}
		pin, pinned := lock.Skills[name]
		if pinned {
			if err := l.verify(name, pin); err != nil {
				problems = append(problems, Problem{Path: filepath.Join(l.userDir, name), Err: err})
				continue
			}
		}
		path := filepath.Join(l.userDir, name, FileName)
		fi, err := os.Stat(path) // follows symlinked skill folders
		if err != nil {
			continue // not a skill folder (or a plain file)
		}
		seen[path] = true
		e := l.cache[path]
		if e == nil || !e.mod.Equal(fi.ModTime()) || e.size != fi.Size() {
			e = l.parseFile(name, path, fi)
			l.cache[path] = e
		}
		if e.problem != nil {
			problems = append(problems, Problem{Path: path, Err: e.problem})
		}
		if e.ok && pinned {
			pe := *e
			pe.skill.Source, pe.skill.Version = SourceRegistry, pin.Version
			e = &pe
		}
		if e.ok {
			byName[name] = e
		}
	}
	for dir := range l.verified {
		if _, ok := lock.Skills[dir]; !ok {
			delete(l.verified, dir)
		}
	}
	for path := range l.cache {
		if !seen[path] {
			delete(l.cache, path)
		}
	}

	skills := make([]Skill, 0, len(byName))
	look := l.paths.finder(l.opts.LookPath, l.keepPaths)
	for _, e := range byName {
		s := e.skill
		if !osMatches(s.OS, l.opts.GOOS) {
			continue
		}
		s.Missing = l.missing(s, look)
		switch {
		case l.disabled[s.Name]:
			s.Off = "disabled"
		case l.only != nil && !l.only[s.Name]:
			s.Off = "not in this agent's skills"
		}
		skills = append(skills, s)
	}
	sort.Slice(skills, func(i, j int) bool { return skills[i].Name < skills[j].Name })
	sort.Slice(problems, func(i, j int) bool { return problems[i].Path < problems[j].Path })
	return skills, problems
}

// parseFile reads and parses one workspace SKILL.md. Problems are logged
// here, once per file version, not on every scan.
func (l *Loader) parseFile(name, path string, fi fs.FileInfo) *entry {
	e := &entry{mod: fi.ModTime(), size: fi.Size()}
	data, err := os.ReadFile(path)
	if err != nil {
		e.problem = err
	} else {
		e.skill, e.ok, e.problem = build(name, data)
		e.skill.Path, e.skill.Source = path, SourceWorkspace
	}
	if e.problem != nil {
		l.log.Warn("skill problem", "path", path, "loaded", e.ok, "err", e.problem)
	}
	return e
}

// build makes the skill of folder name from its SKILL.md. ok is false when
// the skill cannot be used at all (unreadable frontmatter: its requirements
// and mode are unknown); problem is set for anything not as it should be.
func build(name string, data []byte) (s Skill, ok bool, problem error) {
	m, body, err := parse(data)
	switch {
	case errors.Is(err, errNoFrontmatter):
		// Lenient: a plain Markdown manual still helps; it just has no
		// description for the catalogue.
		return Skill{Name: name, Body: body}, true, err
	case err != nil:
		return Skill{}, false, err
	}
	s = Skill{
		Name:        name,
		Description: strings.TrimSpace(m.Description),
		Always:      m.Always,
		Homepage:    m.Homepage,
		Body:        body,
		Bins:        m.Requires.Bins,
		Env:         m.Requires.Env,
		OS:          m.OS,
	}
	var problems []string
	if m.Name != "" && m.Name != name {
		problems = append(problems, fmt.Sprintf("name %q differs from the folder name %q (the folder name is used)", m.Name, name))
	}
	if s.Description == "" {
		problems = append(problems, "no description")
	}
	if len(problems) > 0 {
		problem = errors.New(strings.Join(problems, "; "))
	}
	return s, true, problem
}

// missing lists the unmet requirements of s. look answers PATH searches.
func (l *Loader) missing(s Skill, look func(string) bool) []string {
	var out []string
	for _, bin := range s.Bins {
		if !look(bin) {
			out = append(out, "bin:"+bin)
		}
	}
	for _, key := range s.Env {
		if v, ok := l.opts.LookupEnv(key); !ok || v == "" {
			out = append(out, "env:"+key)
		}
	}
	return out
}
