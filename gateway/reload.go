package gateway

import (
	"context"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/nanobot-go/nanobot/configs"
)

// liveSettings are the settings a reload applies to the running gateway
// (configs.MatchSetting patterns). Every other change is named as waiting
// for a restart.
var liveSettings = []string{
	"channels.*.allowFrom",
	"channels.*.admins",
	"tools.exec.approvedCommands",
}

// configPoll is how often the config file is checked for changes.
const configPoll = 2 * time.Second

// ReloadStatus is what the last reload did (Status.Reload, `nanobot
// status`, the workbench).
type ReloadStatus struct {
	At time.Time `json:"at"`
	// Source says what asked for it: "SIGHUP", "the config file changed",
	// "the workbench".
	Source string `json:"source"`
	// Applied are the settings this reload changed in the running gateway.
	Applied []string `json:"applied,omitempty"`
	// Restart are the settings whose new value differs from the running
	// one and takes effect only after a restart (all of them, not only
	// those this reload saw change).
	Restart []string `json:"restart,omitempty"`
	// Error says the config could not be read (the running one is kept).
	// The reason is in the log only: /api/status answers without a
	// credential, and a config error can quote a value.
	Error string `json:"error,omitempty"`
}

// reloads keeps the config the last reload applied and its report.
type reloads struct {
	mu      sync.Mutex
	applied *configs.Config // nil: the start-up config
	last    *ReloadStatus
}

func (r *reloads) status() *ReloadStatus {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.last == nil {
		return nil
	}
	st := *r.last
	return &st
}

func live(setting string) bool {
	return slices.ContainsFunc(liveSettings, func(p string) bool { return configs.MatchSetting(p, setting) })
}

// reload restarts channels that failed for good, re-reads the config and
// applies it (apply).
func (g *Gateway) reload(source string) {
	if n := g.mgr.RetryFailed(); n > 0 {
		g.log.Info("reload: retrying channels that had failed for good", "count", n)
	}
	if g.o.ReloadConfig == nil {
		return
	}
	next, err := g.o.ReloadConfig()
	if err != nil {
		g.log.Error("reload failed; keeping the running config", "source", source, "err", err)
		g.reloads.mu.Lock()
		g.reloads.last = &ReloadStatus{At: time.Now(), Source: source, Error: "the config does not load; the gateway's log says why"}
		g.reloads.mu.Unlock()
		return
	}
	g.apply(source, next)
}

// apply puts next's live settings into effect and names, in the log and
// the status, every other setting that differs from the running config
// and waits for a restart.
func (g *Gateway) apply(source string, next *configs.Config) {
	g.reloads.mu.Lock()
	defer g.reloads.mu.Unlock()
	prev := g.reloads.applied
	if prev == nil {
		prev = g.cfg
	}
	st := &ReloadStatus{At: time.Now(), Source: source}
	for _, s := range configs.Diff(prev, next) {
		if live(s) {
			st.Applied = append(st.Applied, s)
		}
	}
	for _, s := range configs.Diff(g.cfg, next) {
		if !live(s) {
			st.Restart = append(st.Restart, s)
		}
	}
	g.gate.SetAllowFrom(allowLists(next, g.chans))
	g.gate.SetAdmins(adminLists(next))
	if g.o.Approvals != nil {
		if err := g.o.Approvals.SetApproved("exec", next.Tools.Exec.ApprovedCommands); err != nil {
			g.log.Error("reload: tools.exec.approvedCommands not applied", "err", err) // validated at load: not expected
		}
	}
	g.reloads.applied, g.reloads.last = next, st
	g.log.Info("config reloaded", "source", source, "applied", st.Applied, "restart_needed", len(st.Restart))
	for _, s := range st.Restart {
		g.log.Warn("config: this setting changed and takes effect after a restart", "setting", s)
	}
}

// watchConfig polls the config file and signals when it changed (its
// size, modification time or identity); nil without a file to watch.
func (g *Gateway) watchConfig(ctx context.Context) <-chan struct{} {
	path := g.o.Paths.ConfigFile
	if g.o.ReloadConfig == nil || path == "" {
		return nil
	}
	changed := make(chan struct{}, 1)
	last, _ := os.Stat(path)
	go func() {
		t := time.NewTicker(configPoll)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			fi, err := os.Stat(path)
			if err != nil || !sameFile(last, fi) {
				if err == nil || last != nil {
					select {
					case changed <- struct{}{}:
					default:
					}
				}
				last = fi
			}
		}
	}()
	return changed
}

// sameFile reports whether a and b describe the same unchanged file.
func sameFile(a, b os.FileInfo) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return os.SameFile(a, b) && a.Size() == b.Size() && a.ModTime().Equal(b.ModTime())
}
