package fs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/nanobot-go/nanobot/tools"
	"github.com/nanobot-go/nanobot/tools/internal/pathguard"
)

// maxPatchEdits bounds the edits of one apply_patch call.
const maxPatchEdits = 20

// ApplyPatch is the apply_patch tool: several edits, in one or more files,
// applied all together or not at all.
type ApplyPatch struct {
	*base
	// write replaces a file's content (writeKeepingMode); tests swap it to
	// fail partway through a patch.
	write func(loc *pathguard.Location, data []byte) (existed bool, err error)
}

var _ tools.Tool = (*ApplyPatch)(nil)

// NewApplyPatch returns the apply_patch tool.
func NewApplyPatch(opts Options) (*ApplyPatch, error) {
	return newTool(opts, "apply_patch", func(b *base) *ApplyPatch { return &ApplyPatch{base: b, write: writeKeepingMode} })
}

func (t *ApplyPatch) Description() string {
	return fmt.Sprintf("Change one or more files in a single call: a list of up to %d edits, applied in order. "+
		"action \"replace\" swaps old_text (copied from the file, unique in it) for new_text, matching like edit_file "+
		"(exact first, then ignoring whitespace and indentation differences); action \"add\" appends new_text to a file, "+
		"creating it (and its folders) when it does not exist. Several edits may touch the same file; each sees the result of the ones before. "+
		"The patch is atomic: every edit is checked first and if any one fails nothing is written, and the error names that edit. "+
		"dry_run=true only checks and summarises.%s", maxPatchEdits, t.restrictNote())
}

func (t *ApplyPatch) Parameters() map[string]any {
	return map[string]any{
		"type": "object",
		"properties": map[string]any{
			"edits": map[string]any{
				"type":        "array",
				"minItems":    1,
				"maxItems":    maxPatchEdits,
				"description": "The edits, applied in order.",
				"items": map[string]any{
					"type": "object",
					"properties": map[string]any{
						"path":     map[string]any{"type": "string", "minLength": 1, "description": "File path, relative to the workspace or absolute."},
						"action":   map[string]any{"type": "string", "enum": []any{"replace", "add"}, "description": "replace: old_text -> new_text; add: append new_text (creating the file if needed)."},
						"old_text": map[string]any{"type": []any{"string", "null"}, "description": "For replace: the text to find; it must occur once."},
						"new_text": map[string]any{"type": []any{"string", "null"}, "description": "For replace: the replacement (empty to delete). For add: the text to append."},
					},
					"required": []any{"path", "action"},
				},
			},
			"dry_run": map[string]any{"type": "boolean", "description": "Check the edits and summarise them without writing (default false)."},
		},
		"required": []any{"edits"},
	}
}

// patchEdit is one edit as the model sent it.
type patchEdit struct {
	path, action     string
	oldText, newText *string // nil when absent or null
}

func parseEdits(raw any) ([]patchEdit, error) {
	list, _ := raw.([]any)
	if len(list) == 0 {
		return nil, errors.New("edits is empty; give at least one edit")
	}
	if len(list) > maxPatchEdits {
		return nil, fmt.Errorf("%d edits; at most %d fit in one patch", len(list), maxPatchEdits)
	}
	out := make([]patchEdit, len(list))
	for i, item := range list {
		m, ok := item.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("edits[%d] is not an object", i)
		}
		a := tools.Args(m)
		e := patchEdit{path: strings.TrimSpace(a.String("path")), action: a.String("action")}
		if s, ok := m["old_text"].(string); ok {
			e.oldText = &s
		}
		if s, ok := m["new_text"].(string); ok {
			e.newText = &s
		}
		out[i] = e
	}
	return out, nil
}

func (t *ApplyPatch) Execute(_ context.Context, args map[string]any) (tools.Result, error) {
	edits, err := parseEdits(args["edits"])
	if err != nil {
		return tools.Result{}, err
	}
	p := &patch{tool: t, files: map[string]*patchFile{}}
	defer p.close()
	for i, e := range edits {
		if err := p.apply(e); err != nil {
			return tools.Result{}, fmt.Errorf("edits[%d] (%s %s): %w; nothing was written", i, e.action, e.path, err)
		}
	}
	if tools.Args(args).Bool("dry_run", false) {
		return tools.Result{Content: fmt.Sprintf("Dry run: all %d edits apply; nothing was written.\n%s", len(edits), p.summary())}, nil
	}
	if err := p.commit(); err != nil {
		return tools.Result{}, err
	}
	return tools.Result{Content: fmt.Sprintf("Patch applied (%d edits, %d files).\n%s", len(edits), len(p.order), p.summary())}, nil
}

// patch is one call's work: the files it touches, in the order first
// touched, with their content before and after.
type patch struct {
	tool  *ApplyPatch
	files map[string]*patchFile // by real path, so two spellings are one file
	order []*patchFile
	notes []string // one line per edit
}

// patchFile is one file of a patch.
type patchFile struct {
	loc      *pathguard.Location
	shown    string
	existed  bool
	original []byte   // the bytes before the patch, kept to roll back
	file     text     // the content as the edits so far leave it
	madeDirs []string // folders writing it created, deepest first
}

func (p *patch) close() {
	for _, f := range p.order {
		f.loc.Root.Close()
	}
}

// load returns the file at path, reading it on first use.
func (p *patch) load(path string) (*patchFile, error) {
	loc, err := p.tool.open(path)
	if err != nil {
		return nil, err
	}
	if f, ok := p.files[loc.Real]; ok {
		loc.Root.Close()
		return f, nil
	}
	f := &patchFile{loc: loc, shown: p.tool.paths.Display(loc.Real)}
	raw, err := readAll(loc)
	switch {
	case err == nil:
		if bytes.IndexByte(raw, 0) >= 0 {
			loc.Root.Close()
			return nil, fmt.Errorf("%s is a binary file; apply_patch only edits text", f.shown)
		}
		f.existed, f.original, f.file = true, raw, decodeText(raw)
	case errors.Is(err, os.ErrNotExist):
	default:
		loc.Root.Close()
		return nil, err
	}
	p.files[loc.Real] = f
	p.order = append(p.order, f)
	return f, nil
}

// apply checks one edit against the content so far and applies it in
// memory.
func (p *patch) apply(e patchEdit) error {
	if e.path == "" {
		return errors.New("path is empty")
	}
	if e.newText == nil {
		return errors.New("new_text is required")
	}
	newText := strings.ReplaceAll(*e.newText, "\r\n", "\n")
	switch e.action {
	case "replace":
		if e.oldText == nil || *e.oldText == "" {
			return errors.New(`old_text is required for replace; to append use action "add"`)
		}
		oldText := strings.ReplaceAll(*e.oldText, "\r\n", "\n")
		if oldText == newText {
			return errors.New("old_text and new_text are identical; nothing would change")
		}
		f, err := p.load(e.path)
		if err != nil {
			return err
		}
		if !f.existed && f.file.body == "" {
			return fmt.Errorf(`%s does not exist; use action "add" to create it`, f.shown)
		}
		r, err := replaceText(f.shown, f.file.body, oldText, newText, false)
		if err != nil {
			return err
		}
		f.file.body = r.body
		p.notes = append(p.notes, fmt.Sprintf("- %s: replaced at line %d (-%d +%d lines)%s", f.shown, r.lines[0], r.old, r.new, r.how()))
	case "add":
		f, err := p.load(e.path)
		if err != nil {
			return err
		}
		verb := "appended"
		if !f.existed && f.file.body == "" {
			verb = "created"
		}
		f.file.body = appendText(f.file.body, newText)
		p.notes = append(p.notes, fmt.Sprintf("- %s: %s (+%d lines)", f.shown, verb, countLines(newText)))
	default:
		return fmt.Errorf(`unknown action %q; use "replace" or "add"`, e.action)
	}
	return nil
}

// appendText adds extra at the end of body on a line of its own, and
// leaves the result ending in a newline.
func appendText(body, extra string) string {
	if body != "" && !strings.HasSuffix(body, "\n") && !strings.HasPrefix(extra, "\n") {
		body += "\n"
	}
	body += extra
	if body != "" && !strings.HasSuffix(body, "\n") {
		body += "\n"
	}
	return body
}

func (p *patch) summary() string { return strings.Join(p.notes, "\n") }
