package ollamatest

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
)

func TestWriteModelRefusesWhatItCannotScript(t *testing.T) {
	if err := WriteModel(&bytes.Buffer{}, []Step{{After: "<|a|>", Say: "x"}, {After: "<|a|>", Say: "y"}}); err == nil || !strings.Contains(err.Error(), "two steps after") {
		t.Errorf("two steps after one marker: %v", err)
	}
	var many []Step
	for i := range embd/2 + 1 {
		many = append(many, Step{After: fmt.Sprintf("<|m%d|>", i), Say: fmt.Sprintf("s%d", i)})
	}
	if err := WriteModel(&bytes.Buffer{}, many); err == nil || !strings.Contains(err.Error(), "distinct step tokens") {
		t.Errorf("%d steps: %v", len(many), err)
	}
	var b bytes.Buffer
	if err := WriteModel(&b, many[:3]); err != nil || !bytes.HasPrefix(b.Bytes(), []byte("GGUF\x03\x00\x00\x00")) || b.Len()%ggufAlign != 0 {
		t.Errorf("a model of 3 steps: %v, %d bytes, starts %q", err, b.Len(), b.Bytes()[:8])
	}
}
