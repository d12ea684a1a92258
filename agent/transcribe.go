package agent

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/nanobot-go/nanobot/agent/usage"
	"github.com/nanobot-go/nanobot/bus"
)

// transcriptMarker starts the line that gives the model what was said in
// a voice note or audio file.
const transcriptMarker = "[voice transcription] "

// Transcriber turns a voice note or audio file into text (the stt package
// behind it). Transcribe blocks for the service's answer; the loop calls
// it before a turn, outside the LLM concurrency cap, from any number of
// sessions at once.
type Transcriber interface {
	// Transcribe returns what is said in the audio file at path, of
	// content type mimeType ("" if unknown); silence is "".
	Transcribe(ctx context.Context, path, mimeType string) (string, error)
	// Service names the provider and model, for the usage ledger and logs.
	Service() (provider, model string)
}

// TranscriptionConfig transcribes the audio attachments of messages
// before their turn (LoopConfig.Transcription).
type TranscriptionConfig struct {
	// Transcriber serves every channel; nil: none.
	Transcriber Transcriber
	// ByChannel overrides Transcriber on the channels it names (a
	// channel's own transcription settings).
	ByChannel map[string]Transcriber
}

// For returns the transcriber of channel, or nil.
func (t TranscriptionConfig) For(channel string) Transcriber {
	if tr, ok := t.ByChannel[channel]; ok && tr != nil {
		return tr
	}
	return t.Transcriber
}

// audioExts are audio files told by their name when the adapter gave no
// content type.
var audioExts = map[string]bool{".ogg": true, ".oga": true, ".opus": true, ".mp3": true, ".m4a": true, ".wav": true,
	".flac": true, ".aac": true, ".amr": true, ".weba": true}

// isAudio reports whether md is a voice note or an audio file.
func isAudio(md bus.Media) bool {
	t := strings.ToLower(md.MIMEType)
	switch {
	case strings.HasPrefix(t, "audio/"), strings.HasPrefix(t, "application/ogg"):
		return true
	case t == "" || strings.HasPrefix(t, "application/octet-stream"):
		name := md.Path
		if name == "" {
			name = md.Name
		}
		return audioExts[strings.ToLower(filepath.Ext(name))]
	}
	return false
}

// transcribeAll fills in the transcripts of the audio attachments of
// every message of the turn that has none yet.
func (l *Loop) transcribeAll(ctx context.Context, ms []bus.Inbound) {
	for i := range ms {
		ms[i] = l.transcribe(ctx, ms[i])
	}
}

// transcribe returns m with the transcript of each local audio attachment
// that has none. A failure is logged and the attachment goes to the model
// without one: the message is never held back for it.
func (l *Loop) transcribe(ctx context.Context, m bus.Inbound) bus.Inbound {
	tr := l.cfg.Transcription.For(m.Channel)
	if tr == nil || l.overBudget(m) {
		return m
	}
	var media []bus.Media // copied on the first change: m's slice may be shared
	for i, md := range m.Media {
		if md.Path == "" || md.Transcript != "" || !isAudio(md) || ctx.Err() != nil {
			continue
		}
		start := time.Now()
		text, err := tr.Transcribe(ctx, md.Path, md.MIMEType)
		l.recordTranscription(ctx, m, tr, time.Since(start), err)
		provider, _ := tr.Service()
		if err != nil {
			l.log.Warn("transcription failed; the audio goes to the model without it",
				"session", m.Key(), "provider", provider, "err", err)
			continue
		}
		if text == "" {
			continue
		}
		if media == nil {
			media = slices.Clone(m.Media)
		}
		media[i].Transcript = text
	}
	if media != nil {
		m.Media = media
	}
	return m
}

// recordTranscription puts a transcription call in the usage ledger,
// charged to m's conversation.
func (l *Loop) recordTranscription(ctx context.Context, m bus.Inbound, tr Transcriber, took time.Duration, err error) {
	if l.cfg.Usage == nil {
		return
	}
	provider, model := tr.Service()
	agentName := DefaultAgentName
	if r := l.cfg.Runner; r != nil && r.Agent != "" {
		agentName = r.Agent
	}
	rec := usage.Record{
		Kind: usage.KindTranscription, Agent: agentName, Provider: provider, Model: model,
		Channel: m.Channel, Chat: m.ChatID, Sender: m.SenderID, Session: m.Key(), Source: m.Source.String(),
		Latency: took, Outcome: outcomeOf(err),
	}
	if _, lerr := l.cfg.Usage.Append(rec); lerr != nil {
		l.log.Error("recording transcription usage failed", "err", lerr)
	}
}

// overBudget reports a sender whose budget is used up: their turn will be
// refused, so their audio is not sent to be transcribed first.
func (l *Loop) overBudget(m bus.Inbound) bool {
	r := l.cfg.Runner
	if r == nil || r.Budgets == nil {
		return false
	}
	agent := r.Agent
	if agent == "" {
		agent = DefaultAgentName
	}
	rsv, err := r.Budgets.Reserve(usage.Caller{Agent: agent, Channel: m.Channel, Sender: m.SenderID, Session: m.Key(), Admin: m.Admin,
		Provider: r.ProviderName, Model: r.Model}, usage.Estimate{})
	if err != nil {
		l.log.Info("transcription skipped: the sender's budget is used up", "session", m.Key())
		return true
	}
	rsv.Release()
	return false
}
