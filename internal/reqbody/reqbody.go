// Package reqbody bounds what a client of the gateway's public HTTP server
// can make it wait for and hold while it sends a request body: Deadline
// gives every body a time limit on the connection, Read and Limit bound its
// size, and Status names the answer for what went wrong (413 for a body too
// large, 408 for one that did not arrive in time).
//
// Deadline is the only code that sets read deadlines for bodies; handlers
// read bodies through Read or Limit and answer failures with Status. A
// handler that reads a body without Deadline in front (a unit test's
// httptest server) gets the size bound but no time bound.
//
// Concurrency: every function may be called from any goroutine for
// different requests; one request's body is read by one goroutine at a
// time, as net/http requires of any body.
package reqbody

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"time"
)

// Deadline wraps h so that a request body must arrive within timeout, plus
// one second for every perSecond bytes that have arrived so far. A body
// that keeps coming at perSecond bytes a second or faster is therefore
// never cut (a large upload over a slow link), while one trickled in a
// byte at a time (slowloris) is cut after about timeout. A read past the
// deadline fails with an error for which Status answers 408.
//
// The deadline is put on the connection as soon as the request arrives, so
// it also bounds a body that no handler reads, which net/http discards
// before answering. Once the body has been read to its end the deadline is
// lifted, so an answer streamed afterwards (server-sent events) is not cut.
// Requests without a body are passed on untouched: no deadline ever lands
// on a websocket or an event stream opened with GET. perSecond <= 0 gives
// no allowance for bytes that arrived.
func Deadline(h http.Handler, timeout time.Duration, perSecond int64) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body == nil || r.Body == http.NoBody {
			h.ServeHTTP(w, r)
			return
		}
		b := &timedBody{body: r.Body, ctl: http.NewResponseController(w), start: time.Now(), timeout: timeout, perSecond: perSecond}
		if err := b.ctl.SetReadDeadline(b.deadline()); err != nil {
			// A writer that cannot set deadlines (not net/http's own): serve
			// without one rather than refuse the request.
			h.ServeHTTP(w, r)
			return
		}
		r = r.WithContext(r.Context()) // a shallow copy: handlers must not see their Request changed
		r.Body = b
		h.ServeHTTP(w, r)
	})
}

// timedBody moves the connection's read deadline before every read of a
// body, by the allowance of what has arrived.
type timedBody struct {
	body      io.ReadCloser
	ctl       *http.ResponseController
	start     time.Time
	timeout   time.Duration
	perSecond int64
	got       int64
	// ended is set once a read failed or hit the end. From then on the
	// deadline is never moved again: net/http reads the connection in the
	// background after the body's end (to notice a client that goes away),
	// and a deadline set then would end the request's context.
	ended bool
}

func (b *timedBody) deadline() time.Time {
	d := b.start.Add(b.timeout)
	if b.perSecond > 0 {
		d = d.Add(time.Duration(float64(b.got) / float64(b.perSecond) * float64(time.Second)))
	}
	return d
}

func (b *timedBody) Read(p []byte) (int, error) {
	if !b.ended {
		_ = b.ctl.SetReadDeadline(b.deadline())
	}
	n, err := b.body.Read(p)
	b.got += int64(n)
	if err != nil && !b.ended {
		b.ended = true
		if errors.Is(err, io.EOF) {
			// net/http lifts it itself when it starts its background read;
			// lifting it here too keeps that true for servers that do not.
			_ = b.ctl.SetReadDeadline(time.Time{})
		}
	}
	return n, err
}

func (b *timedBody) Close() error { return b.body.Close() }

// Limit bounds r's body to limit bytes, for a handler that streams it
// (multipart uploads); past the limit reads fail with an
// *http.MaxBytesError and net/http closes the connection after the answer.
func Limit(w http.ResponseWriter, r *http.Request, limit int64) io.ReadCloser {
	return http.MaxBytesReader(w, r.Body, limit)
}

// Read reads r's body of at most limit bytes. Status names the answer for
// its error.
func Read(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, error) {
	body, err := io.ReadAll(Limit(w, r, limit))
	if err != nil {
		return nil, fmt.Errorf("read request body: %w", err)
	}
	return body, nil
}

// Status is the HTTP status that answers a failed body read:
// 413 Request Entity Too Large for a body over its limit, 408 Request
// Timeout for one that stopped or slowed past its deadline, and 400 Bad
// Request for anything else (a client that hung up, a broken chunked
// encoding).
func Status(err error) int {
	var tooBig *http.MaxBytesError
	var ne net.Error
	switch {
	case errors.As(err, &tooBig):
		return http.StatusRequestEntityTooLarge
	case errors.Is(err, os.ErrDeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return http.StatusRequestTimeout
	}
	return http.StatusBadRequest
}
