package gateway

import (
	"context"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/nanobot-go/nanobot/configs"
)

// The address logged for the NATS server never carries a token or
// password given in the URL.
func TestNATSAddressLoggedWithoutCredentials(t *testing.T) {
	for _, in := range []string{"nats://s3cr3tTOKEN@127.0.0.1:4222", "nats://u:p4ss@h:4222", "tls://tok@h:4222"} {
		if got := withoutUser(in); strings.Contains(got, "s3cr3t") || strings.Contains(got, "p4ss") || strings.Contains(got, "tok@") || !strings.Contains(got, ":4222") {
			t.Errorf("%s logged as %s", in, got)
		}
	}
}

// A start with no NATS server to reach says which address it waited for,
// instead of a bare context deadline.
func TestClusterStartNamesTheMissingServer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	cfg := configs.Default()
	cfg.Cluster.NATS.URL = "nats://s3cr3t@" + addr
	cfg.Cluster.Partitions, cfg.Cluster.LeaseTTLS, cfg.Cluster.AckWaitS = 4, 1, 2
	ctx, cancel := context.WithTimeout(t.Context(), 1500*time.Millisecond)
	defer cancel()
	_, err = openCluster(ctx, Options{Config: &cfg, Log: slog.New(slog.DiscardHandler), Instance: "t"}, RoleWorker, nil)
	if err == nil || !strings.Contains(err.Error(), "nats://"+addr) || strings.Contains(err.Error(), "s3cr3t") {
		t.Errorf("start without NATS: %v, want the address named (without its token)", err)
	}
}
