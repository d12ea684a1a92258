package agent

import (
	"context"
	"time"

	"github.com/nanobot-go/nanobot/agent/memory"
	"github.com/nanobot-go/nanobot/agent/usage"
	"github.com/nanobot-go/nanobot/providers"
	"github.com/nanobot-go/nanobot/tools"
	"github.com/nanobot-go/nanobot/tools/recall"
)

// Embedding is the model memory_search embeds with (Deps.Embedding).
type Embedding struct {
	// Client calls the provider's /embeddings; Model is the model sent,
	// Provider its config name (for the ledger and prices).
	Client   providers.Embedder
	Model    string
	Provider string
	// Dimensions asks for shortened vectors (0: the model's own).
	Dimensions int
}

// meteredEmbedder is recall's Embedder over an Embedding: every call is
// held against the budgets first and recorded in the usage ledger (kind
// usage.KindEmbedding) afterwards, charged to the conversation on the
// call's context (a search) or to the agent alone (indexing).
type meteredEmbedder struct {
	e       Embedding
	agent   string
	ledger  *usage.Ledger
	budgets *usage.Budgets
	log     interface{ Error(string, ...any) }
}

var _ recall.Embedder = (*meteredEmbedder)(nil)

func (m *meteredEmbedder) Model() string { return m.e.Provider + "/" + m.e.Model }

func (m *meteredEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	cc, _ := tools.CallContextFrom(ctx)
	if m.budgets != nil {
		var est int64
		for _, t := range texts {
			est += int64(memory.EstimateText(t))
		}
		rsv, err := m.budgets.Reserve(usage.Caller{Agent: m.agent, Channel: cc.Channel, Sender: cc.SenderID, Session: cc.SessionKey,
			Admin: cc.Admin, Provider: m.e.Provider, Model: m.e.Model}, usage.Estimate{Input: est})
		if err != nil {
			return nil, err
		}
		defer rsv.Release()
	}
	start := time.Now()
	resp, err := m.e.Client.Embed(ctx, providers.EmbedRequest{Model: m.e.Model, Input: texts, Dimensions: m.e.Dimensions})
	if m.ledger != nil {
		rec := usage.Record{Kind: usage.KindEmbedding, Agent: m.agent, Provider: m.e.Provider, Model: m.e.Model,
			Latency: time.Since(start), Outcome: outcomeOf(err), Source: usage.SourceMemory,
			Channel: cc.Channel, Chat: cc.ChatID, Session: cc.SessionKey, Sender: cc.SenderID}
		if resp != nil {
			rec.Input = int64(resp.Usage.PromptTokens)
			if rec.Input == 0 {
				for _, t := range texts {
					rec.Input += int64(memory.EstimateText(t))
				}
				rec.Estimated = true
			}
		}
		if _, lerr := m.ledger.Append(rec); lerr != nil && m.log != nil {
			m.log.Error("recording embedding usage failed", "err", lerr)
		}
	}
	if err != nil {
		return nil, err
	}
	return resp.Vectors, nil
}

// embedderOf is memory_search's embedder for deps, or nil.
func embedderOf(deps Deps, agent string, log interface{ Error(string, ...any) }) recall.Embedder {
	if deps.Embedding == nil || deps.Embedding.Client == nil {
		return nil
	}
	return &meteredEmbedder{e: *deps.Embedding, agent: agent, ledger: deps.Usage, budgets: deps.Budgets, log: log}
}
