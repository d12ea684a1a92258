package feishu

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// registrationFake speaks the device-code registration: init, begin, then
// polls answered from script (a pending poll is a 400, as the service
// answers it).
type registrationFake struct {
	mu      sync.Mutex
	polls   []map[string]any
	seen    []string // "action device_code tp" of each request
	pollsAt []time.Time
	srv     *httptest.Server
}

func newRegistrationFake(t *testing.T, polls ...map[string]any) *registrationFake {
	f := &registrationFake{polls: polls}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != registrationPath || r.Header.Get("Content-Type") != "application/x-www-form-urlencoded" {
			http.Error(w, "wrong request", http.StatusNotFound)
			return
		}
		_ = r.ParseForm()
		f.mu.Lock()
		f.seen = append(f.seen, r.Host+" "+r.Form.Get("action")+" "+r.Form.Get("device_code")+" "+r.Form.Get("tp"))
		var out map[string]any
		status := http.StatusOK
		switch r.Form.Get("action") {
		case "init":
			out = map[string]any{"supported_auth_methods": []string{"client_secret"}}
		case "begin":
			if r.Form.Get("archetype") != "PersonalAgent" || r.Form.Get("auth_method") != "client_secret" {
				status = http.StatusBadRequest
			}
			out = map[string]any{"device_code": "dev-1", "verification_uri_complete": "https://accounts.example/qr?c=1", "interval": 1, "expire_in": 30}
		case "poll":
			f.pollsAt = append(f.pollsAt, time.Now())
			out = map[string]any{"error": "authorization_pending"}
			status = http.StatusBadRequest
			if len(f.polls) > 0 {
				out, f.polls = f.polls[0], f.polls[1:]
				if out["client_id"] != nil {
					status = http.StatusOK
				}
			}
		}
		f.mu.Unlock()
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(out)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

// TestRegisterByQR: the flow shows one QR code with its link, polls until
// the scan, and returns the app; a scan by a Lark account moves the polls
// to Lark and says so.
func TestRegisterByQR(t *testing.T) {
	feishu := newRegistrationFake(t, map[string]any{"error": "authorization_pending", "user_info": map[string]any{"tenant_brand": "lark"}})
	lark := newRegistrationFake(t, map[string]any{"client_id": "cli_a1", "client_secret": "s3cr3t"})
	var shown []string
	r := Registrar{URLs: map[string]string{"feishu": feishu.srv.URL, "lark": lark.srv.URL}}
	reg, err := r.Register(context.Background(), func(s string) { shown = append(shown, s) })
	if err != nil {
		t.Fatal(err)
	}
	if reg != (Registration{AppID: "cli_a1", AppSecret: "s3cr3t", Domain: "lark"}) {
		t.Errorf("registration %+v", reg)
	}
	if len(shown) != 1 || !strings.Contains(shown[0], "https://accounts.example/qr?c=1") || !strings.Contains(shown[0], "█") {
		t.Errorf("shown %q, want one QR code with its link", shown)
	}
	if len(lark.seen) != 1 || !strings.HasSuffix(lark.seen[0], "poll dev-1 ob_app") {
		t.Errorf("lark was asked %q, want the poll after the Lark scan", lark.seen)
	}
}

// TestRegisterDeclined: a declined scan ends the flow with
// ErrRegistrationDenied; a cancelled one with ctx's error.
func TestRegisterDeclined(t *testing.T) {
	f := newRegistrationFake(t, map[string]any{"error": "access_denied"})
	r := Registrar{URLs: map[string]string{"feishu": f.srv.URL}}
	if _, err := r.Register(context.Background(), func(string) {}); !errors.Is(err, ErrRegistrationDenied) {
		t.Errorf("declined: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	f = newRegistrationFake(t) // pending for ever
	r = Registrar{URLs: map[string]string{"feishu": f.srv.URL}}
	_, err := r.Register(ctx, func(string) { cancel() })
	if !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
}

// TestRegisterSlowDown: a slow_down answer makes the flow poll 5 s less
// often (RFC 8628 section 3.5), and it goes on to the scan.
func TestRegisterSlowDown(t *testing.T) {
	t.Parallel()
	f := newRegistrationFake(t, map[string]any{"error": "slow_down"}, map[string]any{"client_id": "cli_a1", "client_secret": "s3cr3t"})
	r := Registrar{URLs: map[string]string{"feishu": f.srv.URL}}
	reg, err := r.Register(context.Background(), func(string) {})
	if err != nil || reg.AppID != "cli_a1" {
		t.Fatalf("registration %+v, %v", reg, err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.pollsAt) != 2 {
		t.Fatalf("%d polls, want 2", len(f.pollsAt))
	}
	// The service asked for 1 s; after slow_down it is 6 s.
	if gap := f.pollsAt[1].Sub(f.pollsAt[0]); gap < 5900*time.Millisecond {
		t.Errorf("polled again after %v, want at least 6 s after slow_down", gap)
	}
}
