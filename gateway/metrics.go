package gateway

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/nanobot-go/nanobot/channels"
	"github.com/nanobot-go/nanobot/gateway/bus"
)

// Metrics are the gateway's Prometheus metrics, on their own registry (no
// global state).
type Metrics struct {
	Registry *prometheus.Registry

	inbound        *prometheus.CounterVec
	outbound       *prometheus.CounterVec
	sendFailures   *prometheus.CounterVec
	channelUp      *prometheus.GaugeVec
	channelRestart *prometheus.GaugeVec
	turnLatency    prometheus.Histogram
	turns          *prometheus.CounterVec
	llmLatency     *prometheus.HistogramVec
	llmTokens      *prometheus.CounterVec
	toolCalls      *prometheus.CounterVec
	heartbeats     *prometheus.CounterVec
	outboxDone     *prometheus.CounterVec
}

// NewMetrics creates and registers the metrics. queueDepth reports the
// inbound and outbound queue lengths at scrape time.
func NewMetrics(queueDepth func() (in, out int)) *Metrics {
	r := prometheus.NewRegistry()
	m := &Metrics{
		Registry:       r,
		inbound:        prometheus.NewCounterVec(prometheus.CounterOpts{Name: "nanobot_inbound_messages_total", Help: "Messages received, by channel and outcome (accepted, denied, duplicate)."}, []string{"channel", "outcome"}),
		outbound:       prometheus.NewCounterVec(prometheus.CounterOpts{Name: "nanobot_outbound_sends_total", Help: "Platform sends and edits, by channel and kind."}, []string{"channel", "kind"}),
		sendFailures:   prometheus.NewCounterVec(prometheus.CounterOpts{Name: "nanobot_send_failures_total", Help: "Sends that failed after all retries, by channel."}, []string{"channel"}),
		channelUp:      prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "nanobot_channel_up", Help: "1 when the channel is connected, 0 otherwise."}, []string{"channel", "state"}),
		channelRestart: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "nanobot_channel_restarts", Help: "Restarts of the channel since the gateway started."}, []string{"channel"}),
		turnLatency:    prometheus.NewHistogram(prometheus.HistogramOpts{Name: "nanobot_turn_seconds", Help: "Time from a message being received to its turn finishing.", Buckets: prometheus.ExponentialBuckets(0.05, 2, 14)}),
		turns:          prometheus.NewCounterVec(prometheus.CounterOpts{Name: "nanobot_turns_total", Help: "Finished turns by outcome (ok, error, stopped)."}, []string{"outcome"}),
		llmLatency:     prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "nanobot_llm_request_seconds", Help: "LLM request latency by model.", Buckets: prometheus.ExponentialBuckets(0.05, 2, 14)}, []string{"model"}),
		llmTokens:      prometheus.NewCounterVec(prometheus.CounterOpts{Name: "nanobot_llm_tokens_total", Help: "LLM tokens by model and kind (prompt, completion, cache_read, cache_write)."}, []string{"model", "kind"}),
		toolCalls:      prometheus.NewCounterVec(prometheus.CounterOpts{Name: "nanobot_tool_calls_total", Help: "Tool calls by tool and outcome (ok, error)."}, []string{"tool", "outcome"}),
		heartbeats:     prometheus.NewCounterVec(prometheus.CounterOpts{Name: "nanobot_heartbeats_total", Help: "Heartbeats by decision (empty, skip, run, no-target, error)."}, []string{"decision"}),
		outboxDone:     prometheus.NewCounterVec(prometheus.CounterOpts{Name: "nanobot_outbox_finished_total", Help: "Durable replies finished, by outcome (sent, skipped, refused, expired)."}, []string{"outcome"}),
	}
	r.MustRegister(m.inbound, m.outbound, m.sendFailures, m.channelUp, m.channelRestart, m.turnLatency, m.turns,
		m.llmLatency, m.llmTokens, m.toolCalls, m.heartbeats, m.outboxDone,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if queueDepth != nil {
		r.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "nanobot_inbound_queue_depth", Help: "Messages waiting for the agent."}, func() float64 { in, _ := queueDepth(); return float64(in) }))
		r.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "nanobot_outbound_queue_depth", Help: "Messages waiting for delivery."}, func() float64 { _, out := queueDepth(); return float64(out) }))
	}
	return m
}

// Sent implements channels.SendObserver.
func (m *Metrics) Sent(channel string, kind bus.Kind, _ int, err error) {
	if err != nil {
		m.sendFailures.WithLabelValues(channel).Inc()
		return
	}
	m.outbound.WithLabelValues(channel, kind.String()).Inc()
}

// ChannelState implements channels.HealthObserver.
func (m *Metrics) ChannelState(channel string, h channels.Health) {
	for _, s := range []channels.State{channels.StateStarting, channels.StateConnected, channels.StateReconnecting, channels.StateFailed, channels.StateStopped} {
		v := 0.0
		if s == h.State {
			v = 1
		}
		m.channelUp.WithLabelValues(channel, string(s)).Set(v)
	}
	m.channelRestart.WithLabelValues(channel).Set(float64(h.Restarts))
}

// Inbound counts a received message.
func (m *Metrics) Inbound(channel, outcome string) { m.inbound.WithLabelValues(channel, outcome).Inc() }

// Turn records a finished turn.
func (m *Metrics) Turn(d time.Duration, outcome string) {
	m.turnLatency.Observe(d.Seconds())
	m.turns.WithLabelValues(outcome).Inc()
}

// LLM records one LLM request.
func (m *Metrics) LLM(model string, d time.Duration, prompt, completion, cacheRead, cacheWrite int) {
	m.llmLatency.WithLabelValues(model).Observe(d.Seconds())
	m.llmTokens.WithLabelValues(model, "prompt").Add(float64(prompt))
	m.llmTokens.WithLabelValues(model, "completion").Add(float64(completion))
	m.llmTokens.WithLabelValues(model, "cache_read").Add(float64(cacheRead))
	m.llmTokens.WithLabelValues(model, "cache_write").Add(float64(cacheWrite))
}

// Tool records one tool call.
func (m *Metrics) Tool(name string, err error) {
	outcome := "ok"
	if err != nil {
		outcome = "error"
	}
	m.toolCalls.WithLabelValues(name, outcome).Inc()
}

// OutboxFinished counts a durable reply whose delivery ended.
func (m *Metrics) OutboxFinished(o channels.Outcome) { m.outboxDone.WithLabelValues(string(o)).Inc() }

// OutboxPending reports the replies not yet delivered at scrape time.
func (m *Metrics) OutboxPending(pending func() int) {
	m.Registry.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "nanobot_outbox_pending", Help: "Durable replies not yet delivered (waiting for a platform that is down, or in flight)."},
		func() float64 { return float64(pending()) }))
}

// Heartbeat records a heartbeat decision.
func (m *Metrics) Heartbeat(decision string) { m.heartbeats.WithLabelValues(decision).Inc() }
