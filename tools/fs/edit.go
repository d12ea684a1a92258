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
	// Match and edit with "\n" line ends and restore CRLF on write.
	content := string(raw)
	crlf := strings.Contains(content, "\r\n")
	if crlf {
		content = strings.ReplaceAll(content, "\r\n", "\n")
		oldText = strings.ReplaceAll(oldText, "\r\n", "\n")
		newText = strings.ReplaceAll(newText, "\r\n", "\n")
	}
	kind, hits := locate(content, oldText, newText)
	if kind == matchNone {
		if stripped, ok := stripLineNumbers(oldText); ok {
			if s, ok := stripLineNumbers(newText); ok {
				newText = s
			}
			kind, hits = locate(content, stripped, newText)
		}
	}
	if kind == matchNone {
		return tools.Result{}, notFound(shown, content, oldText)
	}
	lines := make([]int, len(hits))
	for i, h := range hits {
		lines[i] = lineOf(content, h.start)
	}
	if len(hits) > 1 && !a.Bool("replace_all", false) {
		return tools.Result{}, fmt.Errorf("old_text occurs %d times in %s (at lines %s); add surrounding lines to make it unique, or set replace_all to true",
			len(hits), shown, joinInts(lines))
	}
	var sb strings.Builder
	prev := 0
	for _, h := range hits {
		sb.WriteString(content[prev:h.start])
		sb.WriteString(h.replacement)
		prev = h.end
	}
	sb.WriteString(content[prev:])
	updated := sb.String()
	if crlf {
		updated = strings.ReplaceAll(updated, "\n", "\r\n")
	}
	if _, err := writeKeepingMode(loc, []byte(updated)); err != nil {
		return tools.Result{}, err
	}
	how := ""
	switch kind {
	case matchLines:
		how = " (matched ignoring whitespace and indentation differences)"
	case matchTokens:
		how = " (matched ignoring whitespace differences)"
	}
	noun := "occurrence"
	if len(hits) > 1 {
		noun = "occurrences"
	}
	return tools.Result{Content: fmt.Sprintf("Edited %s: replaced %d %s at line %s%s.", shown, len(hits), noun, joinInts(lines), how)}, nil
}

// notFound explains a miss and shows the most similar lines.
func notFound(shown, content, old string) error {
	first, last, score := closest(content, old)
	if first == 0 || score < 0.3 {
		return fmt.Errorf("old_text was not found in %s and no similar lines exist; read the file again (read_file) and copy the text exactly", shown)
	}
	lines, _ := splitLines(content)
	var sb strings.Builder
	for n := first; n <= last && n-first < 30; n++ {
		fmt.Fprintf(&sb, "%6d| %s\n", n, lines[n-1])
	}
	return fmt.Errorf("old_text was not found in %s. The closest lines (%d-%d, %.0f%% similar) are:\n%sCopy the exact text from there (without the line-number prefixes) and retry",
		shown, first, last, score*100, sb.String())
}

func joinInts(ns []int) string {
	parts := make([]string, len(ns))
	for i, n := range ns {
		parts[i] = fmt.Sprint(n)
	}
	return strings.Join(parts, ", ")
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
