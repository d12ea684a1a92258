package channels

import (
	"net/http/httptest"
	"testing"
)

func TestLoopbackBrowser(t *testing.T) {
	tests := []struct {
		name, remote, host string
		header             map[string]string
		want               bool
	}{
		{"script on this machine", "127.0.0.1:5000", "127.0.0.1:18790", nil, true},
		{"browser on localhost", "[::1]:5000", "localhost:18790", map[string]string{"Origin": "http://localhost:18790"}, true},
		{"rebinding name", "127.0.0.1:5000", "evil.example:18790", nil, false},
		{"page of another site", "127.0.0.1:5000", "localhost:18790", map[string]string{"Origin": "https://evil.example"}, false},
		{"broken origin", "127.0.0.1:5000", "localhost:18790", map[string]string{"Origin": "null"}, false},
		{"reverse proxy", "127.0.0.1:5000", "localhost:18790", map[string]string{"X-Forwarded-For": "203.0.113.9"}, false},
		{"remote peer", "203.0.113.9:5000", "localhost:18790", nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "http://"+tt.host+"/", nil)
			r.RemoteAddr = tt.remote
			for k, v := range tt.header {
				r.Header.Set(k, v)
			}
			if got := LoopbackBrowser(r); got != tt.want {
				t.Errorf("LoopbackBrowser = %v, want %v", got, tt.want)
			}
		})
	}
}
