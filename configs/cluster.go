package configs

import (
	"net/url"
	"strings"
)

// ClusterConfig runs one bot on several machines over NATS JetStream (see
// docs/cluster.md). Without nats.url the gateway is one process with
// in-memory queues and files on disk, the default.
type ClusterConfig struct {
	// Role is what `nanobot gateway` runs: "all" (channels and agent in one
	// process), "channels" (the chat adapters and the delivery of replies;
	// one active instance per bot, others wait as hot standbys) or "worker"
	// (the agent; as many as you like). The --role flag overrides it.
	// Default "all".
	Role string `json:"role"`
	// NATS is the connection to the NATS server with JetStream.
	NATS NATSConfig `json:"nats"`
	// Prefix names the bot's streams and buckets, so several bots can
	// share one NATS server. Default "nanobot".
	Prefix string `json:"prefix"`
	// Partitions is how many inbound partitions sessions are spread over:
	// the most workers that can share the load. All instances must agree.
	// Default 16.
	Partitions int `json:"partitions"`
	// LeaseTTLS is how long, in seconds, the work of an instance that died
	// waits before another takes it over (partitions, channels, cron).
	// Default 10.
	LeaseTTLS int `json:"leaseTtlS"`
	// AckWaitS is how long, in seconds, NATS waits for a reply to be
	// delivered before it redelivers it to the channels standby. Default 30.
	AckWaitS int `json:"ackWaitS"`
}

// NATSConfig is a NATS client connection. Use at most one of token,
// credentials and nkey.
type NATSConfig struct {
	// URL is the server, e.g. "nats://nats:4222" (several: comma-separated).
	// Empty: no cluster.
	URL string `json:"url"`
	// Token is a plain authentication token.
	Token string `json:"token"`
	// Credentials is the path of a .creds file (JWT and NKey seed).
	Credentials string `json:"credentials"`
	// NKey is the path of an NKey seed file.
	NKey string `json:"nkey"`
	// TLS configures TLS to the server (tls:// URLs, or when set).
	TLS NATSTLSConfig `json:"tls"`
}

// NATSTLSConfig holds TLS files for the NATS connection.
type NATSTLSConfig struct {
	// CA is a PEM file of the CA that signed the server's certificate
	// (empty: system roots).
	CA string `json:"ca"`
	// Cert and Key are a client certificate for mutual TLS.
	Cert string `json:"cert"`
	Key  string `json:"key"`
}

// Enabled reports whether the gateway runs in cluster mode.
func (c ClusterConfig) Enabled() bool { return strings.TrimSpace(c.NATS.URL) != "" }

func (v *validator) cluster(c ClusterConfig) {
	p := "cluster."
	v.oneOf(p+"role", c.Role, "all", "channels", "worker")
	if !c.Enabled() {
		v.require(c.Role == "all", p+"nats.url", "required for role %q", c.Role)
		return
	}
	for i, u := range strings.Split(c.NATS.URL, ",") {
		pu, err := url.Parse(strings.TrimSpace(u))
		if err != nil || pu.Host == "" || (pu.Scheme != "nats" && pu.Scheme != "tls") {
			v.add(p+"nats.url", "server %d: want nats://host:port or tls://host:port", i+1)
		}
	}
	auth := 0
	for _, s := range []string{c.NATS.Token, c.NATS.Credentials, c.NATS.NKey} {
		if s != "" {
			auth++
		}
	}
	v.require(auth <= 1, p+"nats", "use only one of token, credentials, nkey")
	v.require((c.NATS.TLS.Cert == "") == (c.NATS.TLS.Key == ""), p+"nats.tls", "cert and key go together")
	v.require(c.Partitions >= 1 && c.Partitions <= 1024, p+"partitions", "want 1 to 1024, got %d", c.Partitions)
	v.require(c.LeaseTTLS >= 1 && c.LeaseTTLS <= 300, p+"leaseTtlS", "want 1 to 300 seconds, got %d", c.LeaseTTLS)
	v.require(c.AckWaitS >= 1 && c.AckWaitS <= 3600, p+"ackWaitS", "want 1 to 3600 seconds, got %d", c.AckWaitS)
	v.require(c.Prefix != "" && !strings.ContainsAny(c.Prefix, ". *>\t"), p+"prefix", "want a plain name, got %q", c.Prefix)
}
