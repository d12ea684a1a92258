package media

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"

	"github.com/nanobot-go/nanobot/bus"
)

// Item is one attachment of an inbound message, not fetched yet.
type Item struct {
	// Name is the file name the platform gave, if any.
	Name string
	// MIMEType is the platform's content type, if known (else detected).
	MIMEType string
	// URL is kept as the attachment's location when there is no media
	// folder; it may be empty for platforms whose files need credentials.
	URL string
	// Fetch returns the file's bytes, at most Collector.Max of them
	// (ErrTooLarge beyond).
	Fetch func(ctx context.Context) ([]byte, error)
}

// Collector takes an inbound message's attachments in: it downloads them
// into Dir and lists them on the message, or, for each one it does not
// pass on, adds a short bracketed note to the text so the agent knows a
// file came ("[attachment a.pdf: too large to download …]").
type Collector struct {
	// Dir is the platform's media folder; empty keeps URLs (or notes).
	Dir string
	// Max is the size cap, used in the too-large note.
	Max int64
	// Platform prefixes log lines.
	Platform string
	Log      *slog.Logger
	// Redact cleans download errors before they are logged.
	Redact func(string) string
}

// Collect handles items for m. allowed is channels.Admits for the sender:
// files from a sender the gate would refuse are never fetched. Saved files
// are named <message id>_<n><ext>.
func (c Collector) Collect(ctx context.Context, m *bus.Inbound, allowed bool, items []Item) {
	var notes []string
	label := func(it Item) string {
		if it.Name == "" {
			return "attachment file"
		}
		return "attachment " + it.Name
	}
	note := func(it Item, why string) { notes = append(notes, "["+label(it)+": "+why+"]") }
	for i, it := range items {
		switch {
		case !allowed:
			note(it, "not downloaded, sender not allowed")
			continue
		case c.Dir == "" && it.URL != "":
			m.Media = append(m.Media, bus.Media{URL: it.URL, Name: it.Name, MIMEType: it.MIMEType})
			continue
		case c.Dir == "" || it.Fetch == nil:
			note(it, "not downloaded, no media folder")
			continue
		}
		data, err := it.Fetch(ctx)
		switch {
		case errors.Is(err, ErrTooLarge):
			notes = append(notes, TooLarge(label(it), 0, c.Max))
			continue
		case err != nil:
			c.log().Warn(c.Platform+": attachment download failed", "message_id", m.MessageID, "name", it.Name, "err", c.redact(err.Error()))
			note(it, "download failed")
			continue
		}
		mimeType := it.MIMEType
		if mimeType == "" {
			mimeType = http.DetectContentType(data)
		}
		name := fmt.Sprintf("%s_%d%s", SafeName(m.MessageID), i, Ext(it.Name, "", mimeType))
		path, err := Save(c.Dir, name, data)
		if err != nil {
			c.log().Warn(c.Platform+": saving an attachment failed", "message_id", m.MessageID, "err", err)
			note(it, "could not be saved")
			continue
		}
		m.Media = append(m.Media, bus.Media{Path: path, MIMEType: mimeType, Name: it.Name, Size: int64(len(data))})
	}
	if len(notes) > 0 {
		m.Content = strings.TrimSpace(strings.Join(append([]string{m.Content}, notes...), "\n"))
	}
}

func (c Collector) log() *slog.Logger {
	if c.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return c.Log
}

func (c Collector) redact(s string) string {
	if c.Redact == nil {
		return s
	}
	return c.Redact(s)
}

// TakeURLs turns the attachments an adapter listed on m by URL (Name,
// MIMEType, URL) into Items fetched with client, at most limit bytes each,
// and clears m.Media for Collect to fill in again.
func TakeURLs(m *bus.Inbound, client *http.Client, limit int64) []Item {
	items := make([]Item, 0, len(m.Media))
	for _, md := range m.Media {
		items = append(items, Item{Name: md.Name, MIMEType: md.MIMEType, URL: md.URL, Fetch: func(ctx context.Context) ([]byte, error) {
			return Fetch(ctx, client, md.URL, nil, limit)
		}})
	}
	m.Media = nil
	return items
}
