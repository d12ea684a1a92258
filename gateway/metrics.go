package gateway

import (
	"context"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/nanobot-go/nanobot/agent"
	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/channels"
	"github.com/nanobot-go/nanobot/gateway/relay"
)

// Metrics are the gateway's Prometheus metrics, on their own registry (no
// global state).
type Metrics struct {
	Registry *prometheus.Registry

	inbound      *prometheus.CounterVec
	outbound     *prometheus.CounterVec
	sendFailures *prometheus.CounterVec
	channels     *channelCollector
	turnLatency  prometheus.Histogram
	turns        *prometheus.CounterVec
	llmLatency   *prometheus.HistogramVec
	llmTokens    *prometheus.CounterVec
	llmCost      *prometheus.CounterVec
	toolCalls    *prometheus.CounterVec
	heartbeats   *prometheus.CounterVec
	outboxDone   *prometheus.CounterVec
}

// NewMetrics creates and registers the metrics. queueDepth reports the
// inbound and outbound queue lengths at scrape time.
func NewMetrics(queueDepth func() (in, out int)) *Metrics {
	r := prometheus.NewRegistry()
	m := &Metrics{
		Registry:     r,
		inbound:      prometheus.NewCounterVec(prometheus.CounterOpts{Name: "nanobot_inbound_messages_total", Help: "Messages received, by channel and outcome (accepted, denied, duplicate, bot, rate_limited; lost: not taken by the gateway on a platform that cannot deliver it again)."}, []string{"channel", "outcome"}),
		outbound:     prometheus.NewCounterVec(prometheus.CounterOpts{Name: "nanobot_outbound_sends_total", Help: "Platform sends and edits, by channel and kind."}, []string{"channel", "kind"}),
		sendFailures: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "nanobot_send_failures_total", Help: "Sends that failed after all retries, by channel."}, []string{"channel"}),
		channels:     newChannelCollector(),
		turnLatency:  prometheus.NewHistogram(prometheus.HistogramOpts{Name: "nanobot_turn_seconds", Help: "Time from a message being received to its turn finishing.", Buckets: prometheus.ExponentialBuckets(0.05, 2, 14)}),
		turns:        prometheus.NewCounterVec(prometheus.CounterOpts{Name: "nanobot_turns_total", Help: "Finished turns by outcome (ok, error, stopped, refused: too many messages waiting)."}, []string{"outcome"}),
		llmLatency:   prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "nanobot_llm_request_duration_seconds", Help: "LLM request latency by provider, model and outcome (ok, error).", Buckets: prometheus.ExponentialBuckets(0.05, 2, 14)}, []string{"provider", "model", "outcome"}),
		llmTokens:    prometheus.NewCounterVec(prometheus.CounterOpts{Name: "nanobot_llm_tokens_total", Help: "LLM tokens by provider, model and kind: input (all prompt tokens, cached included), cache_read, cache_write (parts of input), output (all completion tokens), reasoning (part of output)."}, []string{"provider", "model", "kind"}),
		llmCost:      prometheus.NewCounterVec(prometheus.CounterOpts{Name: "nanobot_llm_cost_total", Help: "Estimated LLM cost in US dollars by provider and model, from the price table (calls of models without a known price are not counted)."}, []string{"provider", "model"}),
		toolCalls:    prometheus.NewCounterVec(prometheus.CounterOpts{Name: "nanobot_tool_calls_total", Help: "Tool calls by tool and outcome (ok, error)."}, []string{"tool", "outcome"}),
		heartbeats:   prometheus.NewCounterVec(prometheus.CounterOpts{Name: "nanobot_heartbeats_total", Help: "Heartbeats by decision (empty, skip, run, no-target, error)."}, []string{"decision"}),
		outboxDone:   prometheus.NewCounterVec(prometheus.CounterOpts{Name: "nanobot_outbox_finished_total", Help: "Durable replies finished, by outcome (sent, skipped, refused, expired)."}, []string{"outcome"}),
	}
	r.MustRegister(m.inbound, m.outbound, m.sendFailures, m.channels, m.turnLatency, m.turns,
		m.llmLatency, m.llmTokens, m.llmCost, m.toolCalls, m.heartbeats, m.outboxDone,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if queueDepth != nil {
		r.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "nanobot_inbound_queue_depth", Help: "Messages waiting for the agent (in the inbound queue and the sessions' queues)."}, func() float64 { in, _ := queueDepth(); return float64(in) }))
		r.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "nanobot_outbound_queue_depth", Help: "Messages waiting for delivery (in the outbound queue and the chats' queues)."}, func() float64 { _, out := queueDepth(); return float64(out) }))
	}
	return m
}

// Sent implements relay.SendObserver.
func (m *Metrics) Sent(channel string, kind bus.Kind, _ int, err error) {
	if err != nil {
		m.sendFailures.WithLabelValues(channel).Inc()
		return
	}
	m.outbound.WithLabelValues(channel, kind.String()).Inc()
}

// WatchChannels makes health (the channel Manager's Health) the source of
// the channel metrics: it is read at every scrape, so /metrics and
// /api/status cannot disagree.
func (m *Metrics) WatchChannels(health func() map[string]channels.Health) {
	m.channels.mu.Lock()
	m.channels.health = health
	m.channels.mu.Unlock()
}

// channelCollector reports nanobot_channel_up and nanobot_channel_restarts
// from the channel health at scrape time.
type channelCollector struct {
	up, restarts *prometheus.Desc

	mu     sync.Mutex
	health func() map[string]channels.Health
}

func newChannelCollector() *channelCollector {
	return &channelCollector{
		up: prometheus.NewDesc("nanobot_channel_up",
			"1 for the channel's current state (label state: starting, connecting, connected, reconnecting, failed, stopped), 0 for the others.",
			[]string{"channel", "state"}, nil),
		restarts: prometheus.NewDesc("nanobot_channel_restarts",
			"Restarts of the channel since the gateway started.", []string{"channel"}, nil),
	}
}

func (c *channelCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.up
	ch <- c.restarts
}

func (c *channelCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	health := c.health
	c.mu.Unlock()
	if health == nil {
		return
	}
	for name, h := range health() {
		for _, s := range channels.States {
			v := 0.0
			if s == h.State {
				v = 1
			}
			ch <- constGauge(c.up, v, name, string(s))
		}
		ch <- constGauge(c.restarts, float64(h.Restarts), name)
	}
}

func constGauge(d *prometheus.Desc, v float64, labels ...string) prometheus.Metric {
	m, err := prometheus.NewConstMetric(d, prometheus.GaugeValue, v, labels...)
	if err != nil {
		return prometheus.NewInvalidMetric(d, err)
	}
	return m
}

// Inbound counts a received message.
func (m *Metrics) Inbound(channel, outcome string) { m.inbound.WithLabelValues(channel, outcome).Inc() }

// Turn records a finished turn.
func (m *Metrics) Turn(d time.Duration, outcome string) {
	m.turnLatency.Observe(d.Seconds())
	m.turns.WithLabelValues(outcome).Inc()
}

// ObserveLLM implements agent.RunObserver: one provider call's latency,
// its tokens (as reported, or estimated) and its cost when the price is
// known.
func (m *Metrics) ObserveLLM(_ context.Context, c agent.LLMCall) {
	outcome := "ok"
	if c.Err != nil {
		outcome = "error"
	}
	m.llmLatency.WithLabelValues(c.Provider, c.Model, outcome).Observe(c.Duration.Seconds())
	u := c.Usage
	for _, k := range []struct {
		kind string
		n    int
	}{{"input", u.PromptTokens}, {"output", u.CompletionTokens}, {"cache_read", u.CacheReadTokens}, {"cache_write", u.CacheWriteTokens}, {"reasoning", u.ReasoningTokens}} {
		if k.n > 0 {
			m.llmTokens.WithLabelValues(c.Provider, c.Model, k.kind).Add(float64(k.n))
		}
	}
	if c.CostUSD != nil && *c.CostUSD > 0 {
		m.llmCost.WithLabelValues(c.Provider, c.Model).Add(*c.CostUSD)
	}
}

// ObserveTool implements agent.RunObserver.
func (m *Metrics) ObserveTool(_ context.Context, t agent.ToolCall) {
	outcome := "ok"
	if t.Failed {
		outcome = "error"
	}
	m.toolCalls.WithLabelValues(t.Name, outcome).Inc()
}

// WatchDelivery reports the dispatcher's chat workers, open streams and
// dropped best-effort messages, read from stats at scrape time.
func (m *Metrics) WatchDelivery(stats func() relay.DispatcherStats) {
	m.Registry.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "nanobot_outbound_chat_workers", Help: "Chats with a delivery worker (a worker ends once its chat has been idle for 20 s)."},
			func() float64 { return float64(stats().Chats) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "nanobot_outbound_streams_open", Help: "Streamed replies being delivered (a delta seen, the end not yet)."},
			func() float64 { return float64(stats().Streams) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "nanobot_outbound_dropped_total", Help: "Typing, tool hints, progress and stream text dropped at a full chat queue (replies are never dropped)."},
			func() float64 { return float64(stats().Dropped) }),
	)
}

// OutboxFinished counts a durable reply whose delivery ended.
func (m *Metrics) OutboxFinished(o relay.Outcome) { m.outboxDone.WithLabelValues(string(o)).Inc() }

// OutboxPending reports the replies not yet delivered at scrape time.
func (m *Metrics) OutboxPending(pending func() int) {
	m.Registry.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "nanobot_outbox_pending", Help: "Durable replies not yet delivered (waiting for a platform that is down, or in flight)."},
		func() float64 { return float64(pending()) }))
}

// Heartbeat records a heartbeat decision.
func (m *Metrics) Heartbeat(decision string) { m.heartbeats.WithLabelValues(decision).Inc() }
