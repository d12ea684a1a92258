package gateway

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/nanobot-go/nanobot/internal/owner"
)

// Profiles are the owner's: a loopback peer needs the access token too,
// and beyond loopback not even the token opens them.
func TestPprofOnlyForTheOwnerOnLoopback(t *testing.T) {
	key := owner.New(strings.Repeat("t", 48))
	mux := http.NewServeMux()
	mountPprof(mux, key)
	for _, tc := range []struct {
		remote, auth string
		want         int
	}{
		{"127.0.0.1:5000", "Bearer " + key.Token(), http.StatusOK},
		{"[::1]:5000", "Bearer " + key.Token(), http.StatusOK},
		{"127.0.0.1:5000", "", http.StatusUnauthorized},
		{"127.0.0.1:5000", "Bearer wrong", http.StatusUnauthorized},
		{"192.168.1.20:5000", "Bearer " + key.Token(), http.StatusForbidden},
		{"garbage", "Bearer " + key.Token(), http.StatusForbidden},
	} {
		req := httptest.NewRequest(http.MethodGet, "/debug/pprof/heap", nil)
		req.RemoteAddr = tc.remote
		if tc.auth != "" {
			req.Header.Set("Authorization", tc.auth)
		}
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, req)
		if rec.Code != tc.want {
			t.Errorf("from %s with %q: HTTP %d, want %d", tc.remote, tc.auth, rec.Code, tc.want)
		}
	}
}
