package reqbody

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"
)

func TestStatus(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want int
	}{
		{"too large", fmt.Errorf("read request body: %w", &http.MaxBytesError{Limit: 8}), http.StatusRequestEntityTooLarge},
		{"deadline", fmt.Errorf("read request body: %w", &net.OpError{Op: "read", Err: os.ErrDeadlineExceeded}), http.StatusRequestTimeout},
		{"hung up", fmt.Errorf("read request body: %w", io.ErrUnexpectedEOF), http.StatusBadRequest},
	}
	for _, tt := range tests {
		if got := Status(tt.err); got != tt.want {
			t.Errorf("%s: Status = %d, want %d", tt.name, got, tt.want)
		}
	}
}

// echo answers with the body it read, or with Status of what failed.
var echo = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	body, err := Read(w, r, 1<<20)
	if err != nil {
		http.Error(w, err.Error(), Status(err))
		return
	}
	_, _ = fmt.Fprintf(w, "%d", len(body))
})

// serve runs h behind Deadline on a real listener until the test ends.
func serve(t *testing.T, h http.Handler, timeout time.Duration, perSecond int64) string {
	t.Helper()
	srv := httptest.NewServer(Deadline(h, timeout, perSecond))
	t.Cleanup(srv.Close)
	return srv.Listener.Addr().String()
}

// dial opens a connection to addr that gives up reading after 10 s, so a
// server that never answers fails the test instead of hanging it.
func dial(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	return c
}

func write(t *testing.T, c net.Conn, s string) {
	t.Helper()
	if _, err := io.WriteString(c, s); err != nil {
		t.Fatal(err)
	}
}

// A body that stops arriving is answered 408 after about the timeout, and
// the connection is closed; Content-Length and chunked bodies alike.
func TestStalledBodyAnswered408(t *testing.T) {
	const timeout = 300 * time.Millisecond
	addr := serve(t, echo, timeout, 1<<10)
	for _, tt := range []struct{ name, head, start string }{
		{"content-length", "Content-Length: 100\r\n", "12345"},
		{"chunked", "Transfer-Encoding: chunked\r\n", "5\r\n12345\r\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := dial(t, addr)
			start := time.Now()
			write(t, c, "POST /hook HTTP/1.1\r\nHost: x\r\n"+tt.head+"\r\n"+tt.start)
			br := bufio.NewReader(c)
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatalf("no answer to a stalled body: %v", err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			took := time.Since(start)
			if resp.StatusCode != http.StatusRequestTimeout {
				t.Errorf("stalled body: got %d, want 408", resp.StatusCode)
			}
			if took < timeout {
				t.Errorf("answered after %v, before the %v timeout", took, timeout)
			}
			if _, err := br.ReadByte(); !errors.Is(err, io.EOF) {
				t.Errorf("after the 408 the connection reads %v, want EOF (closed)", err)
			}
		})
	}
}

// A body that keeps arriving at more than perSecond bytes a second takes
// longer than the timeout and is still read whole: every byte buys time.
func TestSteadyBodyOutlastsTimeout(t *testing.T) {
	const timeout, perSecond, size, chunk = 500 * time.Millisecond, 1000, 6000, 100
	addr := serve(t, echo, timeout, perSecond)
	c := dial(t, addr)
	start := time.Now()
	write(t, c, fmt.Sprintf("POST /upload HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n", size))
	for range size / chunk { // 5000 bytes a second when the machine keeps up
		write(t, c, strings.Repeat("x", chunk))
		time.Sleep(20 * time.Millisecond)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || string(got) != fmt.Sprint(size) {
		t.Fatalf("steady upload over %v: got %d %q, want 200 %q", time.Since(start), resp.StatusCode, got, fmt.Sprint(size))
	}
	if took := time.Since(start); took <= timeout {
		t.Logf("the upload took %v, within the timeout: this run did not test the allowance", took)
	}
}

// A body no handler reads is still bounded: net/http discards it before
// answering, and that wait ends at the deadline instead of never.
func TestUnreadBodyBounded(t *testing.T) {
	addr := serve(t, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "ignored")
	}), 300*time.Millisecond, 1<<10)
	c := dial(t, addr)
	write(t, c, "POST /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n1")
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("no answer while the unread body stalls: %v", err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if _, err := br.ReadByte(); !errors.Is(err, io.EOF) {
		t.Errorf("after answering, the connection with the stalled body reads %v, want EOF (closed)", err)
	}
}

// An answer streamed after the body was read is not cut by the body's
// deadline: it outlives later requests' deadlines and still finishes.
func TestStreamAfterBodyNotCut(t *testing.T) {
	release := make(chan struct{})
	addr := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/stall" {
			echo(w, r)
			return
		}
		if _, err := Read(w, r, 1<<10); err != nil {
			http.Error(w, err.Error(), Status(err))
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, "data: a\n\n")
		_ = http.NewResponseController(w).Flush()
		select {
		case <-release:
			_, _ = io.WriteString(w, "data: b\n\n")
		case <-r.Context().Done():
		}
	}), 300*time.Millisecond, 1<<10)

	stream := dial(t, addr)
	write(t, stream, "POST /events HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}")
	sr := bufio.NewReader(stream)
	resp, err := http.ReadResponse(sr, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	events := bufio.NewReader(resp.Body)
	if line, err := events.ReadString('\n'); err != nil || line != "data: a\n" {
		t.Fatalf("first event: %q, %v", line, err)
	}

	// Two bodies stalled one after the other once the stream started: the
	// second one's 408 comes a whole timeout after the stream's own body
	// deadline has passed, time enough for a deadline left on the stream's
	// connection to have ended it.
	for range 2 {
		stall := dial(t, addr)
		write(t, stall, "POST /stall HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\n1")
		sresp, err := http.ReadResponse(bufio.NewReader(stall), nil)
		if err != nil || sresp.StatusCode != http.StatusRequestTimeout {
			t.Fatalf("stalled body: %v %v, want 408", sresp, err)
		}
		sresp.Body.Close()
	}

	close(release)
	rest, err := io.ReadAll(events)
	if err != nil || !strings.Contains(string(rest), "data: b") {
		t.Errorf("the stream after the body deadline: %q, %v; want the second event", rest, err)
	}
}
