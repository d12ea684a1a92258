package wire

import (
	"bufio"
	"bytes"
	"io"
	"iter"
)

// MaxEventSize bounds one server-sent event (a completed OpenAI Responses
// event repeats the whole answer).
const MaxEventSize = 32 << 20

// SSEReader reads a text/event-stream body: lines of "event:" and "data:"
// fields, an empty line ending each event, ":" lines being comments.
type SSEReader struct {
	scan *bufio.Scanner
	data []byte
}

// NewSSEReader reads events from r.
func NewSSEReader(r io.Reader) *SSEReader {
	s := bufio.NewScanner(r)
	// The scanner starts small and grows to the longest line seen.
	s.Buffer(nil, MaxEventSize)
	return &SSEReader{scan: s}
}

// Next returns the data of the next event (several data lines joined by
// newlines), or io.EOF at the end of the body, or the read error. An event
// cut off by the end of the body is dropped. The event name is not
// returned: every API we read repeats it as the payload's type field.
func (r *SSEReader) Next() ([]byte, error) {
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

// Events ranges over the data of the events until the end of the body;
// a read error is yielded once, last, with nil data.
func (r *SSEReader) Events() iter.Seq2[[]byte, error] {
	return func(yield func([]byte, error) bool) {
		for {
			data, err := r.Next()
			if err == io.EOF {
				return
			}
			if !yield(data, err) || err != nil {
				return
			}
		}
	}
}
