package session

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/nanobot-go/nanobot/internal/atomicfile"
	"github.com/nanobot-go/nanobot/providers"
)

// metaLine is a metadata line of a session file. The first line of a file is
// one; later ones are updates (cursor, metadata) and the last one wins.
type metaLine struct {
	Type             string         `json:"_type"`
	Key              string         `json:"key,omitempty"`
	CreatedAt        string         `json:"created_at,omitempty"`
	UpdatedAt        string         `json:"updated_at,omitempty"`
	LastConsolidated int            `json:"last_consolidated"`
	Metadata         map[string]any `json:"metadata"`
}

const metaType = "metadata"

var (
	typeField  = []byte(`"_type"`)
	errNoRole  = errors.New("message has no role")
	errNotMeta = errors.New("not a metadata line")
)

// parsedFile is what a session file holds, plus where the next append goes.
type parsedFile struct {
	meta      *metaLine // last metadata line, nil if none
	metaLines int
	headerOK  bool // the first non-blank line is a metadata line
	messages  []providers.Message
	// size is the length of the valid prefix; bytes after it (a torn last
	// line) are cut before the next write when truncate is set.
	size     int64
	truncate bool
	// needNewline is set when the last line is complete JSON without its
	// newline (hand-edited files); the next append writes one first.
	needNewline bool
}

// parseFile reads a session file. It never fails: a corrupt line is skipped,
// and an unterminated last line that does not decode is treated as torn by a
// crash mid-write and left out. Both are logged.
func parseFile(data []byte, log *slog.Logger) parsedFile {
	var p parsedFile
	lineNo, sawLine := 0, false
	for off := 0; off < len(data); {
		lineNo++
		end, terminated := len(data), false
		if nl := bytes.IndexByte(data[off:], '\n'); nl >= 0 {
			end, terminated = off+nl+1, true
		}
		line := bytes.TrimSpace(data[off:end])
		if len(line) == 0 {
			if terminated {
				p.size = int64(end)
			} else {
				p.truncate = true // trailing blanks: cut so appends start a clean line
			}
			off = end
			continue
		}
		msg, meta, err := decodeLine(line)
		if !sawLine {
			p.headerOK, sawLine = err == nil && meta != nil, true
		}
		switch {
		case err != nil && !terminated:
			log.Warn("session file: dropping torn last line", "line", lineNo, "bytes", end-off, "err", err)
			p.truncate = true
		case err != nil:
			log.Warn("session file: skipping corrupt line", "line", lineNo, "err", err)
			p.size = int64(end)
		default:
			if meta != nil {
				p.meta = meta
				p.metaLines++
			} else {
				p.messages = append(p.messages, msg)
			}
			p.size = int64(end)
			p.needNewline = !terminated
		}
		off = end
	}
	return p
}

// decodeLine decodes one non-blank line as a metadata line or a message.
func decodeLine(line []byte) (providers.Message, *metaLine, error) {
	if bytes.Contains(line, typeField) {
		var probe struct {
			Type string `json:"_type"`
		}
		if err := json.Unmarshal(line, &probe); err != nil {
			return providers.Message{}, nil, err
		}
		if probe.Type == metaType {
			var m metaLine
			if err := json.Unmarshal(line, &m); err != nil {
				return providers.Message{}, nil, err
			}
			return providers.Message{}, &m, nil
		}
	}
	var msg providers.Message
	// Calling the method directly skips json.Unmarshal's extra validating
	// pass; UnmarshalJSON validates as it decodes.
	if err := msg.UnmarshalJSON(line); err != nil {
		return providers.Message{}, nil, err
	}
	if msg.Role == "" {
		return providers.Message{}, nil, errNoRole
	}
	return msg, nil, nil
}

// readMetaLine returns the first line of a file if it is a metadata line.
func readMetaLine(path string) (*metaLine, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	buf := make([]byte, 64<<10)
	n, err := io.ReadFull(fh, buf)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return nil, err
	}
	buf = buf[:n]
	if nl := bytes.IndexByte(buf, '\n'); nl >= 0 {
		buf = buf[:nl]
	}
	_, meta, err := decodeLine(bytes.TrimSpace(buf))
	if err != nil {
		return nil, err
	}
	if meta == nil {
		return nil, errNotMeta
	}
	return meta, nil
}

// appendMessageLines encodes msgs, one JSON line each.
func appendMessageLines(buf []byte, msgs []providers.Message) ([]byte, error) {
	for _, m := range msgs {
		b, err := json.Marshal(m)
		if err != nil {
			return nil, fmt.Errorf("encode %s message: %w", m.Role, err)
		}
		buf = append(append(buf, b...), '\n')
	}
	return buf, nil
}

func appendMetaLine(buf []byte, m metaLine) ([]byte, error) {
	m.Type = metaType
	if m.Metadata == nil {
		m.Metadata = map[string]any{}
	}
	b, err := json.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("encode metadata: %w", err)
	}
	return append(append(buf, b...), '\n'), nil
}

// Time formats: written as RFC 3339 UTC; read also as the Python nanobot's
// isoformat() without a zone (local time).
const timeFormat = time.RFC3339Nano

func formatTime(t time.Time) string { return t.UTC().Format(timeFormat) }

func parseTime(s string) time.Time {
	if s == "" {
		return time.Time{}
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t
	}
	if t, err := time.ParseInLocation("2006-01-02T15:04:05.999999999", s, time.Local); err == nil {
		return t
	}
	return time.Time{}
}

// writeAtomic replaces dir/name with data (see atomicfile): if anything
// fails the target is untouched and the temporary file removed.
func writeAtomic(dir, name string, sync bool, wrap func(io.Writer) io.Writer, data []byte) error {
	return atomicfile.Options{NoSync: !sync, Wrap: wrap}.Write(filepath.Join(dir, name), data, 0o600)
}

// syncDir makes renames and creations in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
