package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/nanobot-go/nanobot/gateway"
	"github.com/nanobot-go/nanobot/internal/atomicfile"
)

// restartFile records who asked for a restart, so the new process can
// tell them it is back.
const restartFile = "restart.json"

// restarter is /restart's side in cmd: the chat command asks for it, the
// gateway stops gracefully (turns drain, replies are delivered), and once
// runGateway has returned and released everything, the binary replaces
// itself with a fresh copy of the same command line.
type restarter struct {
	stop context.CancelFunc

	mu    sync.Mutex
	asked *gateway.RestartOrigin
}

// request is the gateway's Options.Restart.
func (r *restarter) request(from gateway.RestartOrigin) {
	r.mu.Lock()
	if r.asked == nil {
		o := from
		r.asked = &o
	}
	r.mu.Unlock()
	r.stop()
}

func (r *restarter) requested() (gateway.RestartOrigin, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.asked == nil {
		return gateway.RestartOrigin{}, false
	}
	return *r.asked, true
}

// restartAfter writes who asked and replaces the process with the same
// command line (on Windows, where that is not possible, it says so).
func restartAfter(stateDir string, from gateway.RestartOrigin) error {
	from.At = time.Now().UTC()
	b, err := json.Marshal(from)
	if err != nil {
		return err
	}
	if err := atomicfile.Write(filepath.Join(stateDir, restartFile), b, 0o600); err != nil {
		return fmt.Errorf("restart: %w", err)
	}
	return execSelf()
}

// takeRestartOrigin reads and removes the record a restart left, if any:
// the gateway tells that chat it is back. A record older than a few
// minutes is dropped (a restart that did not come back at once).
func takeRestartOrigin(stateDir string) *gateway.RestartOrigin {
	path := filepath.Join(stateDir, restartFile)
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	_ = os.Remove(path)
	var o gateway.RestartOrigin
	if err != nil || json.Unmarshal(b, &o) != nil || time.Since(o.At) > 5*time.Minute || o.Channel == "" {
		return nil
	}
	return &o
}
