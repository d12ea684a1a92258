package gateway

import (
	"bytes"
	"strings"
	"sync"
	"testing"
)

// lockedBuffer is a bytes.Buffer safe for a writer and a reader at once.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// The one-time sign-in link signs in as the owner: it is printed only
// where Options.SignInLink says a person reads (a terminal), never into
// what may be a log; there the address and `nanobot webui open` stand.
func TestSignInLinkOnlyOnATerminal(t *testing.T) {
	for _, onTerminal := range []bool{false, true} {
		var stderr lockedBuffer
		startGatewayOpts(t, testConfig(nil), nil, func(o *Options) {
			o.Stderr, o.SignInLink = &stderr, onTerminal
		})
		out := stderr.String()
		if got := strings.Contains(out, "#login="); got != onTerminal {
			t.Errorf("SignInLink %v: link printed %v:\n%s", onTerminal, got, out)
		}
		if !strings.Contains(out, "workbench: http://127.0.0.1:") || !strings.Contains(out, "nanobot webui open") {
			t.Errorf("SignInLink %v: no address or way to sign in:\n%s", onTerminal, out)
		}
	}
}
