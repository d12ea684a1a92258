package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"sort"
	"time"
)

// measurePrefix holds one 50-turn conversation and compares each request
// the LLM receives with the one before: the share of its bytes that is an
// unchanged prefix is what a provider's prompt cache can reuse.
func measurePrefix(r *report, fx *fakes, bin, work string, quick bool) error {
	turns := 50
	if quick {
		turns = 5
	}
	g, _, err := startGateway(bin, filepath.Join(work, "prefix"), fx, gwOptions{Channels: true})
	if err != nil {
		return err
	}
	defer g.stop()
	fol := newFollower(fx.telegram)
	defer fol.close()
	fx.llm.SetRecording(false) // drop what earlier phases recorded
	fx.llm.SetRecording(true)
	if _, _, failed := runChats(fx, fol, 1, turns, time.Minute); failed > 0 {
		return fmt.Errorf("%d turns unanswered", failed)
	}
	reqs := fx.llm.Requests()
	var prev []byte
	var ratios []float64
	for _, q := range reqs {
		cur := promptBytes(q.Body)
		if prev != nil {
			ratios = append(ratios, float64(commonPrefix(prev, cur))/float64(len(cur)))
		}
		prev = cur
	}
	if len(ratios) == 0 {
		return fmt.Errorf("only %d requests recorded", len(reqs))
	}
	r.PrefixTurns = len(reqs)
	sum := 0.0
	for _, x := range ratios {
		sum += x
	}
	r.PrefixMean = sum / float64(len(ratios))
	sort.Float64s(ratios)
	r.PrefixMin, r.PrefixMedian = ratios[0], ratios[len(ratios)/2]
	r.PrefixLastBytes = len(prev)
	return nil
}

// promptBytes renders a request the way providers lay out a prompt for
// their caches: tool definitions, then the messages in order.
func promptBytes(body map[string]any) []byte {
	var out []byte
	if tools, ok := body["tools"]; ok {
		b, _ := json.Marshal(tools)
		out = append(out, b...)
	}
	msgs, _ := body["messages"].([]any)
	for _, m := range msgs {
		b, _ := json.Marshal(m)
		out = append(out, b...)
	}
	return out
}

func commonPrefix(a, b []byte) int {
	n := min(len(a), len(b))
	for i := range n {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}
