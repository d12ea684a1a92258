package webui

import (
	"cmp"
	"errors"
	"net/http"
	"slices"
	"time"

	"github.com/nanobot-go/nanobot/channels"
	"github.com/nanobot-go/nanobot/gateway/relay"
)

// channelInfo is one channel's card.
type channelInfo struct {
	Name      string         `json:"name"`
	State     channels.State `json:"state"`
	LastError string         `json:"lastError,omitempty"`
	Since     time.Time      `json:"since"`
	Restarts  int            `json:"restarts"`
}

type approvedSender struct {
	Channel  string `json:"channel"`
	SenderID string `json:"senderId"`
}

// listChannels is GET /api/channels: each channel's health, the pairing
// requests waiting and the senders approved by pairing.
func (s *Server) listChannels(w http.ResponseWriter, _ *http.Request) {
	out := []channelInfo{}
	if s.o.Health != nil {
		for name, h := range s.o.Health() {
			out = append(out, channelInfo{Name: name, State: h.State, LastError: h.LastError, Since: h.Since, Restarts: h.Restarts})
		}
	}
	slices.SortFunc(out, func(a, b channelInfo) int { return cmp.Compare(a.Name, b.Name) })
	pending := []relay.PendingPairing{}
	approved := []approvedSender{}
	if p := s.o.Pairing; p != nil {
		pending = append(pending, p.Pending()...)
		for ch, ids := range p.Approved() {
			for _, id := range ids {
				approved = append(approved, approvedSender{Channel: ch, SenderID: id})
			}
		}
	}
	slices.SortFunc(approved, func(a, b approvedSender) int {
		return cmp.Or(cmp.Compare(a.Channel, b.Channel), cmp.Compare(a.SenderID, b.SenderID))
	})
	writeJSON(w, http.StatusOK, map[string]any{"channels": out, "pending": pending, "approved": approved})
}

func (s *Server) pairing(w http.ResponseWriter) *relay.PairingStore {
	if s.o.Pairing == nil {
		writeError(w, http.StatusServiceUnavailable, "", "this gateway instance keeps no pairing store")
	}
	return s.o.Pairing
}

// approvePairing is POST /api/pairing/{code}/approve.
func (s *Server) approvePairing(w http.ResponseWriter, r *http.Request) {
	s.decide(w, r, "approve", (*relay.PairingStore).Approve)
}

// denyPairing is POST /api/pairing/{code}/deny.
func (s *Server) denyPairing(w http.ResponseWriter, r *http.Request) {
	s.decide(w, r, "deny", (*relay.PairingStore).Deny)
}

func (s *Server) decide(w http.ResponseWriter, r *http.Request, verb string, op func(*relay.PairingStore, string) (relay.PendingPairing, error)) {
	p := s.pairing(w)
	if p == nil {
		return
	}
	got, err := op(p, r.PathValue("code"))
	if errors.Is(err, relay.ErrUnknownCode) {
		writeError(w, http.StatusNotFound, "code", "unknown or expired pairing code")
		return
	}
	if err != nil {
		s.internalError(w, "pairing "+verb, err, "could not "+verb+" the pairing request")
		return
	}
	s.log.Info("workbench: pairing "+verb, "channel", got.Channel, "sender", got.SenderID)
	writeJSON(w, http.StatusOK, map[string]any{"request": got, "decision": verb})
}

// revokePairing is DELETE /api/pairing/approved/{channel}/{sender}: the
// sender's next message asks for pairing again (allowFrom entries are
// settings, not pairing, and stay).
func (s *Server) revokePairing(w http.ResponseWriter, r *http.Request) {
	p := s.pairing(w)
	if p == nil {
		return
	}
	ch, sender := r.PathValue("channel"), r.PathValue("sender")
	err := p.Revoke(ch, sender)
	if errors.Is(err, relay.ErrNotApproved) {
		writeError(w, http.StatusNotFound, "sender", "sender "+truncate(sender, 100)+" was not approved on "+truncate(ch, 40)+" by pairing")
		return
	}
	if err != nil {
		s.internalError(w, "pairing revoke", err, "could not revoke the approval")
		return
	}
	s.log.Info("workbench: pairing revoked", "channel", ch, "sender", sender)
	writeJSON(w, http.StatusOK, map[string]any{"revoked": approvedSender{Channel: ch, SenderID: sender}})
}
