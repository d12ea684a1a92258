package fs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/nanobot-go/nanobot/tools"
	"github.com/nanobot-go/nanobot/tools/internal/pathguard"
)

// EditFile is the edit_file tool.
type EditFile struct{ *base }

var _ tools.Tool = (*EditFile)(nil)

// NewEditFile returns the edit_file tool.
func NewEditFile(opts Options) (*EditFile, error) {
	return newTool(opts, "edit_file", func(b *base) *EditFile { return &EditFile{b} })
}

func (t *EditFile) Description() string {
	return "Replace old_text with new_text in a file. old_text should be copied from the file (without read_file's line-number prefixes) " +
		"and include enough surrounding lines to be unique; if it appears several times the edit is refused with the line numbers, " +
		"unless replace_all is true. When there is no exact match, a match that differs only in whitespace or indentation is accepted " +
		"(new_text is re-indented to fit). If nothing matches, the closest lines are shown. To create or overwrite a whole file use write_file." +
		t.restrictNote()
}

func (t *EditFile) Parameters() map[string]any {
	return map[string]any{
		"type": "object",
		"properties": map[string]any{
			"path":        map[string]any{"type": "string", "minLength": 1, "description": "File path, relative to the workspace or absolute."},
			"old_text":    map[string]any{"type": "string", "minLength": 1, "description": "The text to replace."},
			"new_text":    map[string]any{"type": "string", "description": "The replacement text (empty to delete)."},
			"replace_all": map[string]any{"type": "boolean", "description": "Replace every occurrence (default false)."},
		},
		"required": []any{"path", "old_text", "new_text"},
	}
}

func (t *EditFile) Execute(_ context.Context, args map[string]any) (tools.Result, error) {
	a := tools.Args(args)
	oldText, newText := a.String("old_text"), a.String("new_text")
	if oldText == "" {
		return tools.Result{}, errors.New("old_text is empty; to create or overwrite a file use write_file")
	}
	if oldText == newText {
		return tools.Result{}, errors.New("old_text and new_text are identical; nothing would change")
	}
	loc, err := t.open(a.String("path"))
	if err != nil {
		return tools.Result{}, err
	}
	defer loc.Root.Close()
	shown := t.paths.Display(loc.Real)
	raw, err := readAll(loc)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return tools.Result{}, fmt.Errorf("%s does not exist; use write_file to create it", shown)
		}
		return tools.Result{}, err
	}
	if bytes.IndexByte(raw, 0) >= 0 {
		return tools.Result{}, fmt.Errorf("%s is a binary file; edit_file only edits text", shown)
	}
	file := decodeText(raw)
	oldText = strings.ReplaceAll(oldText, "\r\n", "\n")
	newText = strings.ReplaceAll(newText, "\r\n", "\n")
	r, err := replaceText(shown, file.body, oldText, newText, a.Bool("replace_all", false))
	if ae, ok := errors.AsType[*AmbiguousError](err); ok {
		return tools.Result{}, fmt.Errorf("%w, or set replace_all to true", ae)
	}
	if err != nil {
		return tools.Result{}, err
	}
	file.body = r.body
	if _, err := writeKeepingMode(loc, file.bytes()); err != nil {
		return tools.Result{}, err
	}
	noun := "occurrence"
	if len(r.lines) > 1 {
		noun = "occurrences"
	}
	return tools.Result{Content: fmt.Sprintf("Edited %s: replaced %d %s at line %s%s.", shown, len(r.lines), noun, joinInts(r.lines), r.how())}, nil
}

// readAll reads the file at loc through its root.
func readAll(loc *pathguard.Location) ([]byte, error) {
	f, err := loc.Root.OpenFile(loc.Name, os.O_RDONLY, 0)
	if err != nil {
		return nil, loc.Check(err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if fi.IsDir() {
		return nil, fmt.Errorf("%s is a folder, not a file", loc.Real)
	}
	return io.ReadAll(f)
}
