package feishutest

import (
	"encoding/json"
	"net/http"
	"time"
)

// CardKit: create a card entity, stream content into its element, change
// its settings. Every update must carry a larger sequence than the last.

func (s *Server) createCard(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Type string `json:"type"`
		Data string `json:"data"`
	}
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil || in.Type != "card_json" {
		fail(w, http.StatusBadRequest, 300301, "type must be card_json")
		return
	}
	var c struct {
		Schema string `json:"schema"`
		Config struct {
			StreamingMode bool `json:"streaming_mode"`
		} `json:"config"`
		Body struct {
			Elements []struct {
				Tag       string `json:"tag"`
				ElementID string `json:"element_id"`
				Content   string `json:"content"`
			} `json:"elements"`
		} `json:"body"`
	}
	if err := json.Unmarshal([]byte(in.Data), &c); err != nil || c.Schema != "2.0" || len(c.Body.Elements) == 0 {
		s.violate("card entity is not a schema 2.0 card with elements: %s", in.Data)
		fail(w, http.StatusBadRequest, 300301, "invalid card json")
		return
	}
	el := c.Body.Elements[0]
	if el.Tag != "markdown" || el.ElementID == "" {
		s.violate("card's first element is %q with id %q, want a markdown element with an element_id", el.Tag, el.ElementID)
	}
	id := s.id("card_")
	s.cards[id] = &Card{ID: id, Content: el.Content, Streaming: c.Config.StreamingMode}
	s.cardElements[id] = el.ElementID
	reply(w, http.StatusOK, map[string]any{"data": map[string]any{"card_id": id}})
}

func (s *Server) cardContent(w http.ResponseWriter, r *http.Request) {
	cd := s.cards[r.PathValue("card")]
	if cd == nil {
		fail(w, http.StatusBadRequest, 300302, "card not found")
		return
	}
	if r.PathValue("el") != s.cardElements[cd.ID] {
		fail(w, http.StatusBadRequest, 300303, "element not found")
		return
	}
	var in struct {
		Content  string `json:"content"`
		Sequence *int   `json:"sequence"`
		UUID     string `json:"uuid"`
	}
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil || in.Sequence == nil {
		fail(w, http.StatusBadRequest, 300301, "content and sequence are required")
		return
	}
	if *in.Sequence <= cd.Sequence {
		s.violate("card %s: content sequence %d after %d", cd.ID, *in.Sequence, cd.Sequence)
		fail(w, http.StatusBadRequest, 300317, "sequence number compare failed")
		return
	}
	if !cd.Streaming {
		s.violate("card %s: content update while streaming mode is off", cd.ID)
		fail(w, http.StatusBadRequest, 300309, "streaming mode is closed")
		return
	}
	if cd.MessageID == "" {
		s.violate("card %s: content update before the card was sent", cd.ID)
	}
	now := time.Now()
	if gap := now.Sub(cd.lastPut); !cd.lastPut.IsZero() && gap < MinEditGap {
		s.violate("card %s: content updates %s apart, want at least %s", cd.ID, gap, MinEditGap)
	}
	cd.Sequence, cd.Content, cd.lastPut = *in.Sequence, in.Content, now
	cd.Updates++
	s.sent = append(s.sent, Sent{ChatID: s.chats[cd.MessageID], MessageID: cd.MessageID, MsgType: "interactive", Text: in.Content, Edit: true, At: now})
	reply(w, http.StatusOK, map[string]any{"data": map[string]any{}})
}

func (s *Server) cardSettings(w http.ResponseWriter, r *http.Request) {
	cd := s.cards[r.PathValue("card")]
	if cd == nil {
		fail(w, http.StatusBadRequest, 300302, "card not found")
		return
	}
	var in struct {
		Settings string `json:"settings"`
		Sequence *int   `json:"sequence"`
	}
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil || in.Sequence == nil || in.Settings == "" {
		fail(w, http.StatusBadRequest, 300301, "settings and sequence are required")
		return
	}
	var st struct {
		Config struct {
			StreamingMode *bool `json:"streaming_mode"`
		} `json:"config"`
	}
	if err := json.Unmarshal([]byte(in.Settings), &st); err != nil {
		s.violate("card %s: settings is not a JSON string of card settings: %q", cd.ID, in.Settings)
		fail(w, http.StatusBadRequest, 300301, "invalid settings")
		return
	}
	if *in.Sequence <= cd.Sequence {
		s.violate("card %s: settings sequence %d after %d", cd.ID, *in.Sequence, cd.Sequence)
		fail(w, http.StatusBadRequest, 300317, "sequence number compare failed")
		return
	}
	cd.Sequence = *in.Sequence
	if st.Config.StreamingMode != nil {
		cd.Streaming = *st.Config.StreamingMode
	}
	cd.Settings = append(cd.Settings, in.Settings)
	reply(w, http.StatusOK, map[string]any{"data": map[string]any{}})
}
