package channels

import (
	"errors"
	"testing"
)

func TestParts(t *testing.T) {
	boom := errors.New("boom")
	var p Parts
	if p.Any() {
		t.Fatal("Any before a part went out")
	}
	ref, err := p.Fail(boom)
	if ref.MessageID != "" || err != boom {
		t.Errorf("Fail before any part = %v, %v; want the zero ref and the error as it is (retryable)", ref, err)
	}

	p.Sent(MessageRef{ChatID: "c", MessageID: "1"})
	p.Sent(MessageRef{ChatID: "c", MessageID: "2"})
	if !p.Any() || p.First().MessageID != "1" {
		t.Errorf("after two parts: Any %v, First %v; want true, message 1", p.Any(), p.First())
	}
	ref, err = p.Fail(boom)
	var pe *PermanentError
	if ref.MessageID != "1" || !errors.As(err, &pe) || !errors.Is(err, boom) {
		t.Errorf("Fail after a part = %v, %v; want message 1 and a PermanentError wrapping boom", ref, err)
	}
	already := &PermanentError{Err: boom}
	if _, err := p.Fail(already); err != already {
		t.Errorf("Fail wrapped a PermanentError again: %v", err)
	}
}
