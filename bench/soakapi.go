package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"time"
)

// apiTally is what one API client saw.
type apiTally struct {
	Client int
	// Sent requests; Answered ones streamed to [DONE] with the request's
	// marker in the answer; Left were abandoned by the client on purpose
	// after the first piece of the answer.
	Sent, Answered, Left int
	// Refused: 429 (the agent busy) or the gateway not there (connection
	// refused while it restarts). Cut: the stream broke before [DONE] (the
	// gateway killed under it). Errors: any other status, or an error as
	// the answer. The client sees all of these; none is silent.
	Refused, Cut, Errors int
	// Wrong answers finished without the request's own marker, or with
	// another client's: the one API figure that must be 0.
	Wrong   int
	Samples []string // a few of the errors and wrong answers
}

// apiClient is an OpenAI-compatible client of the gateway with its own
// named session, asking one question at a time.
type apiClient struct {
	id   int
	addr func() string
	rng  *rand.Rand
	// leave is the share of requests abandoned mid-stream.
	leave float64

	mu sync.Mutex
	t  apiTally
}

func (a *apiClient) tally() apiTally {
	a.mu.Lock()
	defer a.mu.Unlock()
	t := a.t
	t.Samples = append([]string(nil), a.t.Samples...)
	return t
}

func (a *apiClient) note(f func(t *apiTally), sample string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	f(&a.t)
	if sample != "" && len(a.t.Samples) < 5 {
		a.t.Samples = append(a.t.Samples, sample)
	}
}

// run asks questions until ctx ends.
func (a *apiClient) run(ctx context.Context) {
	a.t.Client = a.id
	for n := 1; ; n++ {
		if !sleepCtx(ctx, time.Duration(500+a.rng.IntN(2500))*time.Millisecond) {
			return
		}
		a.ask(ctx, n)
	}
}

func (a *apiClient) ask(ctx context.Context, n int) {
	marker := fmt.Sprintf("api-%d-%d", a.id, n)
	leave := a.rng.Float64() < a.leave
	body, _ := json.Marshal(map[string]any{"stream": true, "messages": []any{map[string]any{"role": "user", "content": "question " + marker}}})
	// A request in flight when the send phase ends still finishes.
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
	defer cancel()
	req, _ := http.NewRequestWithContext(rctx, http.MethodPost, "http://"+a.addr()+"/v1/chat/completions", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+soakAPIKey)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Session-Id", fmt.Sprint("soak-api-", a.id))
	a.note(func(t *apiTally) { t.Sent++ }, "")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		a.note(func(t *apiTally) { t.Refused++ }, fmt.Sprintf("%s: %v", marker, err))
		return
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 300))
		a.note(func(t *apiTally) { t.Refused++ }, fmt.Sprintf("%s: HTTP %d %s", marker, resp.StatusCode, strings.TrimSpace(string(b))))
		return
	}
	if resp.StatusCode != http.StatusOK {
		a.note(func(t *apiTally) { t.Errors++ }, fmt.Sprintf("%s: HTTP %d", marker, resp.StatusCode))
		return
	}
	var answer strings.Builder
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		if data == "[DONE]" {
			a.judge(marker, answer.String())
			return
		}
		var chunk struct {
			Choices []struct {
				Delta struct {
					Content string `json:"content"`
				} `json:"delta"`
			} `json:"choices"`
			Error any `json:"error"`
		}
		if json.Unmarshal([]byte(data), &chunk) != nil {
			continue
		}
		if chunk.Error != nil {
			a.note(func(t *apiTally) { t.Errors++ }, fmt.Sprintf("%s: stream error %v", marker, chunk.Error))
			return
		}
		for _, c := range chunk.Choices {
			answer.WriteString(c.Delta.Content)
		}
		if leave && answer.Len() > 0 {
			cancel() // hang up mid-answer
			a.note(func(t *apiTally) { t.Left++ }, "")
			return
		}
	}
	a.note(func(t *apiTally) { t.Cut++ }, "")
}

// judge checks a finished answer.
func (a *apiClient) judge(marker, answer string) {
	own := strings.Contains(answer, "["+marker+"]")
	foreign := false
	for _, m := range soakMarkerRe.FindAllStringSubmatch(answer, -1) {
		if m[1] != "api" || m[2] != fmt.Sprint(a.id) {
			foreign = true
		}
	}
	switch {
	case own && !foreign:
		a.note(func(t *apiTally) { t.Answered++ }, "")
	case strings.Contains(answer, "Sorry, "):
		a.note(func(t *apiTally) { t.Errors++ }, fmt.Sprintf("%s: %q", marker, answer))
	default:
		a.note(func(t *apiTally) { t.Wrong++ }, fmt.Sprintf("%s: %q", marker, answer))
	}
}

// sleepCtx sleeps d or until ctx ends; it reports whether d passed.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
