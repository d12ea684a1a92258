package configs

import (
	"strings"
	"testing"
)

func TestClusterValidation(t *testing.T) {
	tests := []struct {
		name string
		edit func(c *ClusterConfig)
		want string // substring of the joined errors; "" means valid
	}{
		{"default is one process", func(c *ClusterConfig) {}, ""},
		{"worker without nats", func(c *ClusterConfig) { c.Role = "worker" }, `cluster.nats.url: required for role "worker"`},
		{"unknown role", func(c *ClusterConfig) { c.Role = "boss"; c.NATS.URL = "nats://n:4222" }, "cluster.role: want one of"},
		{"worker with nats", func(c *ClusterConfig) { c.Role = "worker"; c.NATS.URL = "nats://n:4222,tls://m:4222" }, ""},
		{"bad url", func(c *ClusterConfig) { c.NATS.URL = "http://n:4222" }, "cluster.nats.url: server 1"},
		{"two auth methods", func(c *ClusterConfig) { c.NATS.URL = "nats://n:4222"; c.NATS.Token = "t0ken-x"; c.NATS.NKey = "/k" }, "only one of token"},
		{"cert without key", func(c *ClusterConfig) { c.NATS.URL = "nats://n:4222"; c.NATS.TLS.Cert = "/c.pem" }, "cluster.nats.tls"},
		{"partitions", func(c *ClusterConfig) { c.NATS.URL = "nats://n:4222"; c.Partitions = 0 }, "cluster.partitions"},
		{"prefix", func(c *ClusterConfig) { c.NATS.URL = "nats://n:4222"; c.Prefix = "a.b" }, "cluster.prefix"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := Default()
			tc.edit(&c.Cluster)
			var msgs []string
			for _, e := range c.Validate() {
				msgs = append(msgs, e.Path+": "+e.Msg)
			}
			got := strings.Join(msgs, "; ")
			if tc.want == "" && got != "" || !strings.Contains(got, tc.want) {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestClusterTokenIsSecret(t *testing.T) {
	c := Default()
	c.Cluster.NATS.Token = "s3cret-nats-token"
	found := false
	for _, s := range c.Secrets() {
		found = found || s == "s3cret-nats-token"
	}
	if !found {
		t.Error("cluster.nats.token is not redacted from logs")
	}
}
