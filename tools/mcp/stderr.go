package mcp

import (
	"bytes"
	"log/slog"
	"sync"
)

// maxLine caps one logged stderr line.
const maxLine = 2000

// lineLogger writes a stdio server's stderr to the log, one record per line.
type lineLogger struct {
	log *slog.Logger
	mu  sync.Mutex
	buf []byte
}

func newLineLogger(log *slog.Logger) *lineLogger { return &lineLogger{log: log} }

func (l *lineLogger) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf = append(l.buf, p...)
	for {
		i := bytes.IndexByte(l.buf, '\n')
		if i < 0 {
			break
		}
		l.emit(l.buf[:i])
		l.buf = l.buf[i+1:]
	}
	if len(l.buf) > maxLine {
		l.emit(l.buf)
		l.buf = l.buf[:0]
	}
	return len(p), nil
}

func (l *lineLogger) emit(line []byte) {
	line = bytes.TrimRight(line, "\r")
	if len(line) == 0 {
		return
	}
	if len(line) > maxLine {
		line = append(line[:maxLine:maxLine], "…"...)
	}
	l.log.Info("mcp server stderr", "line", string(line))
}
