package fs

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"unicode/utf8"

	"github.com/nanobot-go/nanobot/tools"
)

// ReadFile is the read_file tool.
type ReadFile struct{ *base }

var _ tools.Tool = (*ReadFile)(nil)

// NewReadFile returns the read_file tool.
func NewReadFile(opts Options) (*ReadFile, error) {
	return newTool(opts, "read_file", func(b *base) *ReadFile { return &ReadFile{b} })
}

func (t *ReadFile) Description() string {
	return fmt.Sprintf("Read a text file, returned with line numbers (\"  12| text\"; the prefix is not part of the file). "+
		"Long files come in pages: the header gives the total line count and the offset of the next page. "+
		"offset is the first line to read (1-based), limit the number of lines (default %d); one call returns at most %d characters. "+
		"Images (PNG, JPEG, GIF, WebP) are returned as images you can see. Other binary files are refused.%s",
		t.opts.DefaultReadLines, t.opts.MaxReadChars, t.restrictNote())
}

func (t *ReadFile) Parameters() map[string]any {
	return map[string]any{
		"type": "object",
		"properties": map[string]any{
			"path":   map[string]any{"type": "string", "minLength": 1, "description": "File path, relative to the workspace or absolute."},
			"offset": map[string]any{"type": "integer", "minimum": 1, "description": "First line to read, 1-based (default 1)."},
			"limit":  map[string]any{"type": "integer", "minimum": 1, "description": fmt.Sprintf("Number of lines to read (default %d).", t.opts.DefaultReadLines)},
		},
		"required": []any{"path"},
	}
}

// imageTypes are the formats multimodal providers accept.
var imageTypes = map[string]bool{"image/png": true, "image/jpeg": true, "image/gif": true, "image/webp": true}

func (t *ReadFile) Execute(ctx context.Context, args map[string]any) (tools.Result, error) {
	a := tools.Args(args)
	loc, err := t.open(a.String("path"))
	if err != nil {
		return tools.Result{}, err
	}
	defer loc.Root.Close()
	shown := t.paths.Display(loc.Real)
	// One open, then fstat: the type check and the read see the same file.
	f, err := loc.Root.OpenFile(loc.Name, os.O_RDONLY, 0)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return tools.Result{}, fmt.Errorf("%s does not exist (use list_dir to see what is there)", shown)
		}
		return tools.Result{}, loc.Check(err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return tools.Result{}, err
	}
	if fi.IsDir() {
		return tools.Result{}, fmt.Errorf("%s is a folder; use list_dir to see its contents", shown)
	}
	br := bufio.NewReaderSize(f, 64<<10)
	sniff, _ := br.Peek(8 << 10)
	mime := http.DetectContentType(sniff)
	if imageTypes[mime] {
		return t.readImage(br, shown, mime, fi.Size())
	}
	if isBinary(sniff, mime) {
		return tools.Result{}, fmt.Errorf("%s is a binary file (%s, %d bytes); read_file shows text and images only. If you need its contents, convert it with exec (for example pdftotext, unzip -l, xxd | head)", shown, mime, fi.Size())
	}
	return t.readText(ctx, br, shown, a.Int("offset", 1), a.Int("limit", t.opts.DefaultReadLines))
}

func (t *ReadFile) readImage(r io.Reader, shown, mime string, size int64) (tools.Result, error) {
	if size > t.opts.MaxImageBytes {
		return tools.Result{}, fmt.Errorf("%s is an image of %d bytes, more than the %d bytes read_file returns; shrink it first (for example with exec: convert in.png -resize 1024x1024 out.png)", shown, size, t.opts.MaxImageBytes)
	}
	data, err := io.ReadAll(io.LimitReader(r, t.opts.MaxImageBytes+1))
	if err != nil {
		return tools.Result{}, err
	}
	return tools.Result{
		Content: fmt.Sprintf("Image %s (%s, %d bytes) is attached.", shown, mime, len(data)),
		Images:  []tools.Image{{MIMEType: mime, Data: data}},
	}, nil
}

// isBinary: NUL bytes, or content the sniffer does not call text (PDF,
// archives, executables, control bytes). Text in a legacy encoding is read
// with invalid bytes replaced.
func isBinary(sample []byte, mime string) bool {
	return bytes.IndexByte(sample, 0) >= 0 || !strings.HasPrefix(mime, "text/")
}

func (t *ReadFile) readText(ctx context.Context, r *bufio.Reader, shown string, offset, limit int) (tools.Result, error) {
	if offset < 1 {
		offset = 1
	}
	if limit < 1 {
		limit = t.opts.DefaultReadLines
	}
	budget := t.opts.MaxReadChars
	var body strings.Builder
	total, last := 0, 0
	capped := false
	for {
		line, err := r.ReadString('\n')
		if line == "" && err != nil {
			if !errors.Is(err, io.EOF) {
				return tools.Result{}, err
			}
			break
		}
		total++
		if total%10000 == 0 && ctx.Err() != nil {
			return tools.Result{}, ctx.Err()
		}
		if total < offset || total >= offset+limit || capped {
			continue
		}
		text := strings.ToValidUTF8(strings.TrimRight(line, "\r\n"), "\uFFFD")
		entry := fmt.Sprintf("%6d| %s\n", total, text)
		if n := utf8.RuneCountInString(entry); n > budget {
			if last > 0 {
				capped = true
				continue
			}
			// A single line longer than the whole budget: show its start.
			keep := max(budget-100, 0)
			rs := []rune(text)
			entry = fmt.Sprintf("%6d| %s … [line cut: %d more characters]\n", total, string(rs[:min(keep, len(rs))]), len(rs)-min(keep, len(rs)))
			capped = true
		}
		body.WriteString(entry)
		budget -= utf8.RuneCountInString(entry)
		last = total
	}
	if total == 0 {
		return tools.Result{Content: fmt.Sprintf("File %s is empty.", shown)}, nil
	}
	if offset > total {
		return tools.Result{}, fmt.Errorf("offset %d is past the end of %s, which has %d lines", offset, shown, total)
	}
	var header string
	switch {
	case offset == 1 && last == total:
		header = fmt.Sprintf("File %s (%d lines):", shown, total)
	case last == total:
		header = fmt.Sprintf("File %s (%d lines), lines %d-%d (end of file):", shown, total, offset, last)
	default:
		why := ""
		if capped {
			why = fmt.Sprintf(" (stopped at the %d-character limit)", t.opts.MaxReadChars)
		}
		header = fmt.Sprintf("File %s (%d lines), lines %d-%d%s. Next page: read_file with offset=%d.", shown, total, offset, last, why, last+1)
	}
	return tools.Result{Content: header + "\n" + strings.TrimRight(body.String(), "\n")}, nil
}
