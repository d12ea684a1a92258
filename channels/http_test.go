package channels

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
)

// failingBody yields its data and then err, as a connection does when the
// gateway's body deadline passes (os.ErrDeadlineExceeded) or the client
// hangs up (io.ErrUnexpectedEOF).
type failingBody struct {
	data string
	err  error
}

func (b *failingBody) Read(p []byte) (int, error) {
	if b.data == "" {
		return 0, b.err
	}
	n := copy(p, b.data)
	b.data = b.data[n:]
	return n, nil
}

func TestAllowPostAndReadBody(t *testing.T) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !AllowPost(w, r) {
			return
		}
		body, ok := ReadBody(w, r, 8)
		if !ok {
			return
		}
		_, _ = w.Write(body)
	})
	tests := []struct {
		name, method string
		body         io.Reader
		status       int
		allow        string
	}{
		{"fits", http.MethodPost, strings.NewReader("12345678"), http.StatusOK, ""},
		{"not a post", http.MethodGet, strings.NewReader(""), http.StatusMethodNotAllowed, http.MethodPost},
		{"too large", http.MethodPost, strings.NewReader("123456789"), http.StatusRequestEntityTooLarge, ""},
		{"stalled past the deadline", http.MethodPost, &failingBody{"123", &net.OpError{Op: "read", Net: "tcp", Err: os.ErrDeadlineExceeded}}, http.StatusRequestTimeout, ""},
		{"broken off", http.MethodPost, &failingBody{"123", io.ErrUnexpectedEOF}, http.StatusBadRequest, ""},
	}
	for _, tt := range tests {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(tt.method, "/hook", tt.body))
		if rec.Code != tt.status || rec.Header().Get("Allow") != tt.allow {
			t.Errorf("%s: got %d (Allow %q), want %d (Allow %q)", tt.name, rec.Code, rec.Header().Get("Allow"), tt.status, tt.allow)
		}
		if tt.status == http.StatusOK && rec.Body.String() != "12345678" {
			t.Errorf("%s: body read %q, want %q", tt.name, rec.Body.String(), "12345678")
		}
	}
}
