package relay

import (
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nanobot-go/nanobot/internal/atomicfile"
)

// Pairing defaults: codes live an hour, at most three wait per channel (so
// strangers cannot flood the owner with codes).
const (
	PairingTTL        = time.Hour
	MaxPendingPerChan = 3
)

// PendingPairing is a code waiting for the owner's approval.
type PendingPairing struct {
	Code     string    `json:"code"`
	Channel  string    `json:"channel"`
	SenderID string    `json:"senderId"`
	ChatID   string    `json:"chatId"`
	Created  time.Time `json:"created"`
	Expires  time.Time `json:"expires"`
}

type pairingFile struct {
	Pending  []PendingPairing    `json:"pending"`
	Approved map[string][]string `json:"approved"` // channel -> sender ids
}

// PairingStore keeps pairing codes and approved senders in one JSON file
// (state/pairing.json). The gateway and `nanobot pairing approve` share it:
// every change re-reads the file under an flock and writes it atomically,
// and reads notice changes made by the other process.
type PairingStore struct {
	path string
	now  func() time.Time

	mu    sync.Mutex
	data  pairingFile
	mtime time.Time
}

// ErrUnknownCode is returned by Approve for a code that does not exist or
// expired.
var ErrUnknownCode = errors.New("unknown or expired pairing code")

// ErrTooManyPending is returned by Request when a channel has too many
// codes waiting.
var ErrTooManyPending = errors.New("too many pairing requests pending")

// NewPairingStore opens (or prepares) the store at path.
func NewPairingStore(path string) *PairingStore {
	return &PairingStore{path: path, now: time.Now}
}

// IsApproved reports whether sender was approved on channel.
func (p *PairingStore) IsApproved(channel, sender string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.refresh()
	return matchAny(p.data.Approved[channel], sender)
}

// Request returns the pending code of a sender, creating one if needed.
// created tells whether the code is new (the sender should be told).
func (p *PairingStore) Request(channel, sender, chat string) (code string, created bool, err error) {
	err = p.update(func(d *pairingFile, now time.Time) error {
		for _, pp := range d.Pending {
			if pp.Channel == channel && pp.SenderID == sender {
				code = pp.Code
				return nil
			}
		}
		n := 0
		for _, pp := range d.Pending {
			if pp.Channel == channel {
				n++
			}
		}
		if n >= MaxPendingPerChan {
			return ErrTooManyPending
		}
		code = newCode()
		created = true
		d.Pending = append(d.Pending, PendingPairing{Code: code, Channel: channel, SenderID: sender, ChatID: chat, Created: now, Expires: now.Add(PairingTTL)})
		return nil
	})
	return code, created, err
}

// Approve approves the sender behind code and returns its request.
func (p *PairingStore) Approve(code string) (PendingPairing, error) { return p.resolve(code, true) }

// Deny drops the request behind code without approving its sender (who
// may ask again).
func (p *PairingStore) Deny(code string) (PendingPairing, error) { return p.resolve(code, false) }

// resolve removes the request behind code and returns it; approve also
// adds its sender to the channel's approved senders.
func (p *PairingStore) resolve(code string, approve bool) (PendingPairing, error) {
	code = normalizeCode(code)
	var found PendingPairing
	err := p.update(func(d *pairingFile, _ time.Time) error {
		i := slices.IndexFunc(d.Pending, func(pp PendingPairing) bool { return pp.Code == code })
		if i < 0 {
			return ErrUnknownCode
		}
		found = d.Pending[i]
		d.Pending = slices.Delete(d.Pending, i, i+1)
		if approve && !slices.Contains(d.Approved[found.Channel], found.SenderID) {
			d.Approved[found.Channel] = append(d.Approved[found.Channel], found.SenderID)
		}
		return nil
	})
	return found, err
}

// ErrNotApproved is returned by Revoke for a sender that was not approved.
var ErrNotApproved = errors.New("sender was not approved by pairing")

// Revoke withdraws the approval of sender on channel; its next message
// asks for pairing again.
func (p *PairingStore) Revoke(channel, sender string) error {
	return p.update(func(d *pairingFile, _ time.Time) error {
		i := slices.Index(d.Approved[channel], sender)
		if i < 0 {
			return ErrNotApproved
		}
		d.Approved[channel] = slices.Delete(d.Approved[channel], i, i+1)
		if len(d.Approved[channel]) == 0 {
			delete(d.Approved, channel)
		}
		return nil
	})
}

// Approved lists the senders approved by pairing, by channel.
func (p *PairingStore) Approved() map[string][]string {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.refresh()
	out := make(map[string][]string, len(p.data.Approved))
	for ch, ids := range p.data.Approved {
		out[ch] = slices.Clone(ids)
	}
	return out
}

// Pending lists the codes waiting for approval.
func (p *PairingStore) Pending() []PendingPairing {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.refresh()
	now := p.now()
	var out []PendingPairing
	for _, pp := range p.data.Pending {
		if now.Before(pp.Expires) {
			out = append(out, pp)
		}
	}
	return out
}

// refresh reloads the file if another process changed it. Caller holds mu.
func (p *PairingStore) refresh() {
	fi, err := os.Stat(p.path)
	if err != nil {
		if p.data.Approved == nil {
			p.data = pairingFile{Approved: map[string][]string{}}
		}
		return
	}
	if fi.ModTime().Equal(p.mtime) && p.data.Approved != nil {
		return
	}
	if d, err := readPairing(p.path); err == nil {
		p.data, p.mtime = d, fi.ModTime()
	}
}

func readPairing(path string) (pairingFile, error) {
	b, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return pairingFile{}, err
	}
	return decodePairing(path, b)
}

// decodePairing reads the file's content (nil when there is no file yet).
func decodePairing(path string, b []byte) (pairingFile, error) {
	d := pairingFile{Approved: map[string][]string{}}
	if len(b) == 0 {
		return d, nil
	}
	if err := json.Unmarshal(b, &d); err != nil {
		return d, fmt.Errorf("pairing file %s: %w", path, err)
	}
	if d.Approved == nil {
		d.Approved = map[string][]string{}
	}
	return d, nil
}

// update applies f to the file's current content under an exclusive lock,
// drops expired codes, and saves atomically.
func (p *PairingStore) update(f func(d *pairingFile, now time.Time) error) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	var d pairingFile
	err := atomicfile.Update(p.path, 0o600, func(old []byte) ([]byte, error) {
		var err error
		if d, err = decodePairing(p.path, old); err != nil {
			return nil, err
		}
		now := p.now()
		d.Pending = slices.DeleteFunc(d.Pending, func(pp PendingPairing) bool { return !now.Before(pp.Expires) })
		if err := f(&d, now); err != nil {
			return nil, err
		}
		return json.MarshalIndent(d, "", "  ")
	})
	if err != nil {
		return err
	}
	p.data = d
	if fi, err := os.Stat(p.path); err == nil {
		p.mtime = fi.ModTime()
	}
	return nil
}

// Codes use an alphabet without look-alikes (no 0/O, 1/I/L).
const codeAlphabet = "ABCDEFGHJKMNPQRSTUVWXYZ23456789"

func newCode() string {
	var b strings.Builder
	for i := range 8 {
		if i == 4 {
			b.WriteByte('-')
		}
		n, _ := rand.Int(rand.Reader, big.NewInt(int64(len(codeAlphabet))))
		b.WriteByte(codeAlphabet[n.Int64()])
	}
	return b.String()
}

// normalizeCode accepts "abcd1234", "ABCD-1234" and spaced variants.
func normalizeCode(s string) string {
	s = strings.ToUpper(strings.NewReplacer("-", "", " ", "").Replace(strings.TrimSpace(s)))
	if len(s) == 8 {
		return s[:4] + "-" + s[4:]
	}
	return s
}
