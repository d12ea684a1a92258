package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/configs"
	"github.com/nanobot-go/nanobot/gateway"
	"github.com/nanobot-go/nanobot/gateway/natsbus/natstest"
	"github.com/nanobot-go/nanobot/internal/waitfor"
	"github.com/nanobot-go/nanobot/providers"
)

func TestStatusShowsRunningGateway(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "config.json")
	if err := os.WriteFile(cfgPath, []byte(fmt.Sprintf(`{"gateway": {"port": %d, "heartbeat": {"enabled": false}}}`, port)), 0o600); err != nil {
		t.Fatal(err)
	}
	l, err := configs.Load(configs.Options{Path: cfgPath})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- gateway.Run(ctx, gateway.Options{Config: &l.Config, Paths: l.Paths, Provider: providers.Unconfigured{}, Channels: newChannelRegistry(), Listener: ln, Stderr: io.Discard, Ready: func(string) { close(ready) }})
	}()
	defer func() { cancel(); <-done }()
	select {
	case <-ready:
	case <-time.After(10 * time.Second):
		t.Fatal("gateway not ready")
	}
	// Serving is not yet connected: the channels report in a moment later.
	waitfor.Within(t, "/readyz to answer 200", 10*time.Second, func() bool {
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/readyz", port))
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	out, _, err := run(t, "status", "--config", cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"(running", "ready: true", "web          connected", "queues: 0 inbound"} {
		if !strings.Contains(out, want) {
			t.Errorf("status lacks %q:\n%s", want, out)
		}
	}
	out, _, err = run(t, "channels", "status", "--config", cfgPath)
	if err != nil || !strings.Contains(out, "health (gateway") || !strings.Contains(out, "web          connected") {
		t.Errorf("channels status: %v\n%s", err, out)
	}
	cancel()
	<-done
	done <- nil // for the deferred wait
	out, _, err = run(t, "channels", "status", "--config", cfgPath)
	if err == nil || !strings.Contains(out, "(not running)") {
		t.Errorf("channels status with the gateway down: %v\n%s", err, out)
	}
}

// In cluster mode `nanobot status` lists the instances and their roles.
func TestStatusShowsCluster(t *testing.T) {
	srv := natstest.Start(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "config.json")
	cfg := fmt.Sprintf(`{"gateway": {"port": %d, "heartbeat": {"enabled": false}}, "cluster": {"nats": {"url": %q}, "leaseTtlS": 1}}`, port, srv.URL())
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	l, err := configs.Load(configs.Options{Path: cfgPath})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- gateway.Run(ctx, gateway.Options{Config: &l.Config, Paths: l.Paths, Provider: providers.Unconfigured{}, Channels: newChannelRegistry(), Listener: ln,
			Stderr: io.Discard, Instance: "node-a", Ready: func(string) { close(ready) }})
	}()
	defer func() { cancel(); <-done }()
	select {
	case <-ready:
	case <-time.After(10 * time.Second):
		t.Fatal("gateway not ready")
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		out, _, err := run(t, "status", "--config", cfgPath)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(out, "cluster:    node-a (role all)") && strings.Contains(out, "(channels active)") && strings.Contains(out, "partitions [0 1 2") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("status lacks the cluster:\n%s", out)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
