// Package sse reads a text/event-stream body, as the LLM vendors' streaming
// APIs send it: lines of "event:" and "data:" fields, an empty line ending
// each event, ":" lines being comments.
//
// A Reader belongs to one goroutine; the data it returns is valid until the
// next call to Next.
package sse

import (
	"bufio"
	"bytes"
	"io"
)

// MaxEventSize bounds one event (a completed OpenAI Responses event repeats
// the whole answer).
const MaxEventSize = 32 << 20

// Reader reads events from a body.
type Reader struct {
	scan *bufio.Scanner
	data []byte
}

// NewReader reads events from r.
func NewReader(r io.Reader) *Reader {
	s := bufio.NewScanner(r)
	// The scanner starts small and grows to the longest line seen.
	s.Buffer(nil, MaxEventSize)
	return &Reader{scan: s}
}

// Next returns the data of the next event (several data lines joined by
// newlines), or io.EOF at the end of the body, or the read error. An event
// cut off by the end of the body is dropped. The event name is not
// returned: every API we read repeats it as the payload's type field.
func (r *Reader) Next() ([]byte, error) {
	r.data = r.data[:0]
	for r.scan.Scan() {
		line := r.scan.Bytes()
		if len(line) == 0 {
			if len(r.data) == 0 {
				continue
			}
			return r.data, nil
		}
		name, value, _ := bytes.Cut(line, []byte(":"))
		if len(value) > 0 && value[0] == ' ' {
			value = value[1:]
		}
		if string(name) == "data" {
			if len(r.data) > 0 {
				r.data = append(r.data, '\n')
			}
			r.data = append(r.data, value...)
		}
	}
	if err := r.scan.Err(); err != nil {
		return nil, err
	}
	return nil, io.EOF
}
