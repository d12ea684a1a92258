package channels

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

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
		method, body string
		status       int
		allow        string
	}{
		{http.MethodPost, "12345678", http.StatusOK, ""},
		{http.MethodGet, "", http.StatusMethodNotAllowed, http.MethodPost},
		{http.MethodPost, "123456789", http.StatusRequestEntityTooLarge, ""},
	}
	for _, tt := range tests {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(tt.method, "/hook", strings.NewReader(tt.body)))
		if rec.Code != tt.status || rec.Header().Get("Allow") != tt.allow {
			t.Errorf("%s %d bytes: got %d (Allow %q), want %d (Allow %q)", tt.method, len(tt.body), rec.Code, rec.Header().Get("Allow"), tt.status, tt.allow)
		}
		if tt.status == http.StatusOK && rec.Body.String() != tt.body {
			t.Errorf("body read %q, want %q", rec.Body.String(), tt.body)
		}
	}
}
