package discord

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/channels"
	"github.com/nanobot-go/nanobot/channels/discord/discordtest"
	"github.com/nanobot-go/nanobot/configs"
)

func TestAttachmentsAreDownloaded(t *testing.T) {
	fake := discordtest.New(t)
	mediaDir := t.TempDir()
	cfg := DefaultConfig()
	cfg.Enabled, cfg.AllowFrom = true, []string{"*"}
	cfg.Token, cfg.APIBase, cfg.MaxMediaBytes = discordtest.Token, fake.URL, 1000
	ch, err := New(cfg, channels.Deps{Paths: configs.Paths{Media: mediaDir}})
	if err != nil {
		t.Fatal(err)
	}
	in := run(t, ch)

	png := append([]byte("\x89PNG\r\n\x1a\n"), bytes.Repeat([]byte{0}, 100)...)
	fake.Send(discordtest.Msg{From: alice, ChannelID: dm(alice), Content: "what is this?", Attachments: []discordtest.File{
		{Name: "cat.png", ContentType: "image/png", Data: png},
		{Name: "notes (1).txt", ContentType: "text/plain", Data: []byte("hello")},
		{Name: "huge.bin", Data: bytes.Repeat([]byte("x"), 2000)},
		{Name: "liar.bin", Data: bytes.Repeat([]byte("y"), 5000), Size: 10},
	}})
	got := in.wait(t, "what is this?")
	if len(got.Media) != 2 {
		t.Fatalf("media %+v, want the two small files", got.Media)
	}
	img := got.Media[0]
	if !img.IsImage() || img.Name != "cat.png" || img.Size != int64(len(png)) {
		t.Errorf("image media %+v", img)
	}
	for i, want := range [][]byte{png, []byte("hello")} {
		m := got.Media[i]
		if data, err := os.ReadFile(m.Path); err != nil || !bytes.Equal(data, want) {
			t.Errorf("media %d at %s: %q, %v", i, m.Path, data, err)
		}
		if filepath.Dir(m.Path) != filepath.Join(mediaDir, "discord") {
			t.Errorf("media %d saved at %s, want in %s/discord", i, m.Path, mediaDir)
		}
	}
	for _, name := range []string{"huge.bin", "liar.bin"} {
		if !strings.Contains(got.Content, "["+"attachment "+name+": too large") {
			t.Errorf("content %q lacks a too-large note for %s", got.Content, name)
		}
	}

	// A sender the gate refuses: nothing is fetched.
	before := fake.Downloads()
	fake.Send(discordtest.Msg{From: mallory, ChannelID: dm(mallory), Content: "take my file", Attachments: []discordtest.File{{Name: "x.png", Data: png}}})
	got = in.wait(t, "take my file")
	if len(got.Media) != 0 || !strings.Contains(got.Content, "not downloaded") || fake.Downloads() != before {
		t.Errorf("stranger's attachment: media %+v content %q, %d downloads", got.Media, got.Content, fake.Downloads()-before)
	}
}

func TestSendMedia(t *testing.T) {
	fake := discordtest.New(t)
	ch := newChannel(t, fake, nil, func(c *Config) { c.MaxMediaBytes = 1000 })
	dir := t.TempDir()
	var media []bus.Media
	for i := range 12 {
		p := filepath.Join(dir, "f"+string(rune('a'+i))+".txt")
		if err := os.WriteFile(p, []byte{byte('a' + i)}, 0o600); err != nil {
			t.Fatal(err)
		}
		media = append(media, bus.Media{Path: p, MIMEType: "text/plain"})
	}
	media = append(media, bus.Media{URL: "https://example.com/report.pdf"})
	ref, err := ch.SendMedia(t.Context(), bus.Outbound{ChatID: general, Content: "**your files**", Media: media})
	if err != nil {
		t.Fatal(err)
	}
	sent := fake.Sent()
	if len(sent) != 2 || ref.MessageID != sent[0].MessageID {
		t.Fatalf("sent %d messages (ref %v), want 2 (10 files, then 2)", len(sent), ref)
	}
	if sent[0].Content != "**your files**\nhttps://example.com/report.pdf" || sent[1].Content != "" {
		t.Errorf("texts %q / %q", sent[0].Content, sent[1].Content)
	}
	if len(sent[0].Files) != 10 || len(sent[1].Files) != 2 {
		t.Fatalf("files per message %d / %d, want 10 / 2", len(sent[0].Files), len(sent[1].Files))
	}
	if f := sent[1].Files[1]; f.Name != "fl.txt" || string(f.Data) != "l" {
		t.Errorf("last file %q = %q", f.Name, f.Data)
	}

	// A file over the cap or missing is a permanent error: retrying cannot help.
	big := filepath.Join(dir, "big.bin")
	os.WriteFile(big, bytes.Repeat([]byte("z"), 2000), 0o600)
	for _, p := range []string{big, filepath.Join(dir, "missing")} {
		_, err := ch.SendMedia(t.Context(), bus.Outbound{ChatID: general, Media: []bus.Media{{Path: p}}})
		var pe *channels.PermanentError
		if !errors.As(err, &pe) {
			t.Errorf("%s: err %v, want a PermanentError", p, err)
		}
	}
}
