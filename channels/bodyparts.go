package channels

import "errors"

// Parts keeps count of a message that goes out in several parts (the text,
// then each file; or files in batches): SendMedia returns the first part's
// reference, and once a part went out a failure is permanent, because a
// retry would send the parts already sent a second time. The zero value is
// ready; a Parts belongs to one SendMedia call.
type Parts struct {
	first MessageRef
	sent  bool
}

// Sent records a part that went out.
func (p *Parts) Sent(ref MessageRef) {
	if !p.sent {
		p.first, p.sent = ref, true
	}
}

// Any reports whether a part went out.
func (p *Parts) Any() bool { return p.sent }

// First is the first part's reference (the zero value before any).
func (p *Parts) First() MessageRef { return p.first }

// Fail is what SendMedia returns when a part failed with err: the first
// part's reference, and err, made permanent if a part already went out.
func (p *Parts) Fail(err error) (MessageRef, error) {
	var pe *PermanentError
	if p.sent && !errors.As(err, &pe) {
		err = &PermanentError{Err: err}
	}
	return p.first, err
}
