package email

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	gomail "github.com/emersion/go-message/mail"

	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/channels"
	"github.com/nanobot-go/nanobot/channels/email/emailtest"
)

// TestSendMediaAttachesFiles: files go out as attachments of one mail,
// read back by an independent MIME parser (go-message); URL-only media are
// linked in the text; files beyond the cap are named instead of attached.
func TestSendMediaAttachesFiles(t *testing.T) {
	s := emailtest.New(t, emailtest.Options{})
	ch := newChannel(t, s, nil, channels.Deps{}, nil)
	dir := t.TempDir()
	report := []byte("%PDF-1.4 quarterly numbers")
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	pdf := write("report.pdf", report)
	big := write("huge.bin", bytes.Repeat([]byte{1}, MaxAttachBytes+1))
	_, err := ch.SendMedia(t.Context(), bus.Outbound{ChatID: "ann@example.test", Content: "Here is the report.",
		Metadata: bus.Metadata{"subject": "Numbers", "message_id": "q1@example.test"},
		Media: []bus.Media{
			{Path: pdf, Name: "Bericht Q3 – final.pdf", MIMEType: "application/pdf"},
			{URL: "https://example.test/chart.png"},
			{Path: big},
		}})
	if err != nil {
		t.Fatalf("SendMedia: %v", err)
	}
	out := s.Outbox()
	if len(out) != 1 {
		t.Fatalf("%d mails, want one", len(out))
	}
	if out[0].Header.Get("Subject") != "Re: Numbers" || out[0].Header.Get("In-Reply-To") != "<q1@example.test>" {
		t.Errorf("not threaded: %v", out[0].Header)
	}
	r, err := gomail.CreateReader(bytes.NewReader(out[0].Raw))
	if err != nil {
		t.Fatal(err)
	}
	var text string
	var files []string
	for {
		p, err := r.NextPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(p.Body)
		switch h := p.Header.(type) {
		case *gomail.InlineHeader:
			text += string(body)
		case *gomail.AttachmentHeader:
			name, _ := h.Filename()
			typ, _, _ := h.ContentType()
			files = append(files, name)
			if !bytes.Equal(body, report) || typ != "application/pdf" {
				t.Errorf("attachment %s (%s): %q", name, typ, body)
			}
		}
	}
	if len(files) != 1 || files[0] != "Bericht Q3 – final.pdf" {
		t.Errorf("attachments %q", files)
	}
	for _, want := range []string{"Here is the report.", "https://example.test/chart.png", "[huge.bin not attached"} {
		if !strings.Contains(text, want) {
			t.Errorf("text %q lacks %q", text, want)
		}
	}
	if _, err := ch.SendMedia(t.Context(), bus.Outbound{ChatID: "ann@example.test", Media: []bus.Media{{Name: "x"}}}); err == nil {
		t.Error("a medium with neither path nor URL was accepted")
	}
}
