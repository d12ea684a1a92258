package gateway

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestPprofOnlyForLoopback(t *testing.T) {
	mux := http.NewServeMux()
	mountPprof(mux)
	for _, tc := range []struct {
		remote string
		want   int
	}{
		{"127.0.0.1:5000", http.StatusOK},
		{"[::1]:5000", http.StatusOK},
		{"192.168.1.20:5000", http.StatusForbidden},
		{"garbage", http.StatusForbidden},
	} {
		req := httptest.NewRequest(http.MethodGet, "/debug/pprof/heap", nil)
		req.RemoteAddr = tc.remote
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, req)
		if rec.Code != tc.want {
			t.Errorf("from %s: HTTP %d, want %d", tc.remote, rec.Code, tc.want)
		}
	}
}
