package usage

import (
	"encoding/json"
	"errors"
	"strconv"
	"time"
)

// Record is one provider call.
type Record struct {
	// Time is when the call ended.
	Time time.Time
	// Kind is what was bought: "" for a model call (chat), KindImage for
	// generated images, KindTranscription for speech to text. Totals add
	// every kind.
	Kind string
	// Agent is the agent that made the call.
	Agent string
	// Channel, Chat, Sender and Session say whose turn it was.
	Channel, Chat, Sender, Session string
	// Source is who produced the message: user, cron, heartbeat, subagent,
	// api (bus.Source.String()), or SourceConsolidation for the calls that
	// fold a conversation's old messages into memory.
	Source string
	// Provider and Model are the provider config name and the model sent.
	Provider, Model string
	// Input counts every prompt token, cached ones included; CacheRead and
	// CacheWrite are the parts read from and written to the prompt cache.
	Input, CacheRead, CacheWrite int64
	// Output counts every completion token, reasoning included; Reasoning
	// is the part the model spent thinking (when the vendor says).
	Output, Reasoning int64
	// Latency is how long the call took.
	Latency time.Duration
	// Outcome is "ok", "cancelled" or an error class (OutcomeError...).
	Outcome string
	// Estimated is set when the provider reported no usage and the token
	// counts were estimated from the text.
	Estimated bool
	// CostUSD is the call's cost in US dollars; nil when the model's price
	// is unknown (never 0 for unknown).
	CostUSD *float64
}

// SourceConsolidation is the Source of memory consolidation calls: they
// are charged to the conversation whose history they fold into memory.
const SourceConsolidation = "consolidation"

// KindImage marks a record of generated images (the generate_image tool).
const KindImage = "image"

// KindEmbedding marks a record of an embeddings call (memory_search's
// index and queries).
const KindEmbedding = "embedding"

// SourceMemory is the Source of the calls memory_search makes to embed
// what it indexes and the queries it is given.
const SourceMemory = "memory"

// KindTranscription marks a record of a voice note or audio file turned
// into text before a turn. It counts no tokens; the services bill by the
// minute of audio, which the prices do not know, so its cost is unknown.
const KindTranscription = "transcription"

// Outcomes of a call.
const (
	OutcomeOK        = "ok"
	OutcomeCancelled = "cancelled"
	// OutcomeTimeout, OutcomeRateLimited, OutcomeNetwork, OutcomeHTTP
	// (followed by the status, "http_500") and OutcomeError are error
	// classes.
	OutcomeTimeout     = "timeout"
	OutcomeRateLimited = "rate_limited"
	OutcomeNetwork     = "network"
	OutcomeHTTP        = "http_"
	OutcomeError       = "error"
)

// Tokens is the sum of input and output tokens.
func (r Record) Tokens() int64 { return r.Input + r.Output }

// The JSON keys of a line, in the order they are written. Short, because
// a busy instance writes millions of lines and a query reads them all.
const (
	keyTime       = "ts" // unix milliseconds
	keyAgent      = "agent"
	keyChannel    = "ch"
	keyChat       = "chat"
	keySender     = "sender"
	keySession    = "session"
	keySource     = "src"
	keyProvider   = "provider"
	keyModel      = "model"
	keyInput      = "in"
	keyCacheRead  = "cr"
	keyCacheWrite = "cw"
	keyOutput     = "out"
	keyReasoning  = "rsn"
	keyLatency    = "ms"
	keyOutcome    = "outcome"
	keyEstimated  = "est"
	keyCost       = "usd"
	keyKind       = "kind"
)

// appendLine appends r as one JSON line (with its newline) to b.
func appendLine(b []byte, r *Record) []byte {
	b = append(b, `{"`+keyTime+`":`...)
	b = strconv.AppendInt(b, r.Time.UnixMilli(), 10)
	str := func(k, v string) {
		b = append(b, `,"`...)
		b = append(b, k...)
		b = append(b, `":`...)
		b = appendString(b, v)
	}
	num := func(k string, v int64) {
		b = append(b, `,"`...)
		b = append(b, k...)
		b = append(b, `":`...)
		b = strconv.AppendInt(b, v, 10)
	}
	str(keyAgent, r.Agent)
	str(keyChannel, r.Channel)
	str(keyChat, r.Chat)
	str(keySender, r.Sender)
	str(keySession, r.Session)
	str(keySource, r.Source)
	str(keyProvider, r.Provider)
	str(keyModel, r.Model)
	num(keyInput, r.Input)
	num(keyCacheRead, r.CacheRead)
	num(keyCacheWrite, r.CacheWrite)
	num(keyOutput, r.Output)
	num(keyReasoning, r.Reasoning)
	num(keyLatency, r.Latency.Milliseconds())
	str(keyOutcome, r.Outcome)
	if r.Estimated {
		b = append(b, `,"`+keyEstimated+`":true`...)
	}
	if r.CostUSD != nil {
		b = append(b, `,"`+keyCost+`":`...)
		b = strconv.AppendFloat(b, *r.CostUSD, 'g', -1, 64)
	}
	if r.Kind != "" {
		str(keyKind, r.Kind)
	}
	return append(b, "}\n"...)
}

// appendString appends s as a JSON string; plain strings (the usual case)
// are copied as they are.
func appendString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' || c >= 0x80 {
			q, _ := json.Marshal(s) // a string always marshals
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// field indexes of rawRecord.str.
const (
	fAgent = iota
	fChannel
	fChat
	fSender
	fSession
	fSource
	fProvider
	fModel
	fOutcome
	nStrFields
)

// rawRecord is a parsed line whose strings still point into the line:
// queries read millions of lines and copy only the strings they keep.
type rawRecord struct {
	ts                       int64
	in, cr, cw, out, rsn, ms int64
	str                      [nStrFields][]byte
	est                      bool
	cost                     float64
	hasCost                  bool
	escaped                  bool // a string held an escape; str has it decoded
}

var errBadLine = errors.New("usage: malformed ledger line")

// parseLine parses one line (without its newline) written by appendLine,
// or any flat JSON object with the same keys. Unknown keys are ignored, so
// later versions may add fields.
func parseLine(line []byte, r *rawRecord) error {
	*r = rawRecord{}
	i := skipSpace(line, 0)
	if i >= len(line) || line[i] != '{' {
		return errBadLine
	}
	i++
	seenTime := false
	for {
		i = skipSpace(line, i)
		if i < len(line) && line[i] == '}' {
			break
		}
		if i >= len(line) || line[i] != '"' {
			return errBadLine
		}
		end := i + 1
		for end < len(line) && line[end] != '"' {
			end++
		}
		if end >= len(line) {
			return errBadLine
		}
		key := line[i+1 : end]
		i = skipSpace(line, end+1)
		if i >= len(line) || line[i] != ':' {
			return errBadLine
		}
		i = skipSpace(line, i+1)
		if i >= len(line) {
			return errBadLine
		}
		var val []byte
		isString := line[i] == '"'
		if isString {
			s, next, escaped, ok := scanString(line, i)
			if !ok {
				return errBadLine
			}
			val, i = s, next
			r.escaped = r.escaped || escaped
		} else {
			j := i
			for j < len(line) && line[j] != ',' && line[j] != '}' && line[j] != ' ' {
				j++
			}
			val, i = line[i:j], j
		}
		if err := r.set(key, val, isString); err != nil {
			return err
		}
		if string(key) == keyTime {
			seenTime = true
		}
		i = skipSpace(line, i)
		if i < len(line) && line[i] == ',' {
			i++
			continue
		}
		if i < len(line) && line[i] == '}' {
			break
		}
		return errBadLine
	}
	if !seenTime {
		return errBadLine
	}
	return nil
}

func (r *rawRecord) set(key, val []byte, isString bool) error {
	if isString {
		switch string(key) {
		case keyAgent:
			r.str[fAgent] = val
		case keyChannel:
			r.str[fChannel] = val
		case keyChat:
			r.str[fChat] = val
		case keySender:
			r.str[fSender] = val
		case keySession:
			r.str[fSession] = val
		case keySource:
			r.str[fSource] = val
		case keyProvider:
			r.str[fProvider] = val
		case keyModel:
			r.str[fModel] = val
		case keyOutcome:
			r.str[fOutcome] = val
		}
		return nil
	}
	var dst *int64
	switch string(key) {
	case keyTime:
		dst = &r.ts
	case keyInput:
		dst = &r.in
	case keyCacheRead:
		dst = &r.cr
	case keyCacheWrite:
		dst = &r.cw
	case keyOutput:
		dst = &r.out
	case keyReasoning:
		dst = &r.rsn
	case keyLatency:
		dst = &r.ms
	case keyEstimated:
		r.est = string(val) == "true"
		return nil
	case keyCost:
		if string(val) == "null" {
			return nil
		}
		f, err := strconv.ParseFloat(string(val), 64)
		if err != nil {
			return errBadLine
		}
		r.cost, r.hasCost = f, true
		return nil
	default:
		return nil
	}
	n, ok := atoi(val)
	if !ok {
		return errBadLine
	}
	*dst = n
	return nil
}

// atoi parses a decimal integer without allocating.
func atoi(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 19 {
		return 0, false
	}
	neg := b[0] == '-'
	if neg {
		b = b[1:]
		if len(b) == 0 {
			return 0, false
		}
	}
	var n int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	if neg {
		n = -n
	}
	return n, true
}

// scanString reads the JSON string starting at line[i] (a quote). It
// returns the decoded content (a sub-slice of line when there is no
// escape), the index after the closing quote and whether it had escapes.
func scanString(line []byte, i int) (s []byte, next int, escaped, ok bool) {
	j := i + 1
	for j < len(line) {
		switch line[j] {
		case '"':
			if !escaped {
				return line[i+1 : j], j + 1, false, true
			}
			var out string
			if json.Unmarshal(line[i:j+1], &out) != nil {
				return nil, 0, false, false
			}
			return []byte(out), j + 1, true, true
		case '\\':
			escaped = true
			j += 2
			continue
		}
		j++
	}
	return nil, 0, false, false
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\r') {
		i++
	}
	return i
}

// record copies a parsed line into a Record.
func (r *rawRecord) record() Record {
	rec := Record{
		Time:    time.UnixMilli(r.ts).UTC(),
		Agent:   string(r.str[fAgent]),
		Channel: string(r.str[fChannel]), Chat: string(r.str[fChat]),
		Sender: string(r.str[fSender]), Session: string(r.str[fSession]),
		Source: string(r.str[fSource]), Provider: string(r.str[fProvider]), Model: string(r.str[fModel]),
		Input: r.in, CacheRead: r.cr, CacheWrite: r.cw, Output: r.out, Reasoning: r.rsn,
		Latency: time.Duration(r.ms) * time.Millisecond, Outcome: string(r.str[fOutcome]), Estimated: r.est,
	}
	if r.hasCost {
		c := r.cost
		rec.CostUSD = &c
	}
	return rec
}
