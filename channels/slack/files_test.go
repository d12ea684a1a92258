package slack

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nanobot-go/nanobot/channels"
	"github.com/nanobot-go/nanobot/channels/slack/slacktest"
	"github.com/nanobot-go/nanobot/configs"
	"github.com/nanobot-go/nanobot/internal/waitfor"
)

func TestSharedFilesAreDownloaded(t *testing.T) {
	fake := slacktest.New(t)
	mediaDir := t.TempDir()
	cfg := DefaultConfig()
	cfg.Enabled, cfg.AllowFrom = true, []string{"*"}
	cfg.AppToken, cfg.BotToken, cfg.APIBase = slacktest.AppToken, slacktest.BotToken, fake.APIBase()
	cfg.MaxMediaBytes = 1000
	ch, err := New(cfg, channels.Deps{Paths: configs.Paths{Media: mediaDir}})
	if err != nil {
		t.Fatal(err)
	}
	in := &inbox{stranger: malloryID}
	run(t, ch, in)

	png := append([]byte("\x89PNG\r\n\x1a\n"), bytes.Repeat([]byte{1}, 50)...)
	fake.Push(slacktest.Event{Channel: dm(aliceID), ChannelType: "im", User: aliceID, Text: "see attached", Files: []slacktest.SharedFile{
		{Name: "chart.png", Mimetype: "image/png", Data: png},
		{Name: "big.csv", Mimetype: "text/csv", Data: []byte("x"), Size: 5000},
		{Name: "liar.txt", Mimetype: "text/plain", Data: bytes.Repeat([]byte("y"), 3000), Size: 10},
		{Name: "elsewhere.txt", Mimetype: "text/plain", Data: []byte("z"), URL: "https://evil.example/steal"},
	}})
	got := in.wait(t, "see attached")
	if len(got.Media) != 1 || !got.Media[0].IsImage() || got.Media[0].Name != "chart.png" {
		t.Fatalf("media %+v, want the chart only", got.Media)
	}
	if data, err := os.ReadFile(got.Media[0].Path); err != nil || !bytes.Equal(data, png) {
		t.Errorf("saved chart: %v", err)
	}
	if filepath.Dir(got.Media[0].Path) != filepath.Join(mediaDir, "slack") {
		t.Errorf("saved at %s, want in %s/slack", got.Media[0].Path, mediaDir)
	}
	for _, note := range []string{"[file big.csv: too large", "[file liar.txt: too large", "[file elsewhere.txt: not downloaded]"} {
		if !strings.Contains(got.Content, note) {
			t.Errorf("content %q lacks %q", got.Content, note)
		}
	}
	if n := fake.FileGets(); n != 2 { // the chart and the liar; never the foreign host
		t.Errorf("%d downloads, want 2", n)
	}

	// A file alone (no text) is still a message.
	fake.Push(slacktest.Event{Channel: dm(aliceID), ChannelType: "im", User: aliceID, Files: []slacktest.SharedFile{{Name: "notes.txt", Mimetype: "text/plain", Data: []byte("n")}}})
	waitfor.True(t, "the file-only message", func() bool {
		for _, m := range in.all() {
			if len(m.Media) == 1 && m.Media[0].Name == "notes.txt" {
				return true
			}
		}
		return false
	})

	// A sender the gate would refuse: nothing is fetched.
	before := fake.FileGets()
	fake.Push(slacktest.Event{Channel: dm(malloryID), ChannelType: "im", User: malloryID, Text: "open me", Files: []slacktest.SharedFile{{Name: "x.png", Mimetype: "image/png", Data: png}}})
	got = in.wait(t, "open me")
	if len(got.Media) != 0 || fake.FileGets() != before {
		t.Errorf("stranger's file: media %+v, %d downloads", got.Media, fake.FileGets()-before)
	}
}

func TestSlackHost(t *testing.T) {
	ch := &Channel{fileHost: "127.0.0.1:5000"}
	for link, want := range map[string]bool{
		"https://files.slack.com/files-pri/T1-F1/a.png": true,
		"https://slack.com/x":                           true,
		"http://files.slack.com/x":                      false, // never the token in clear
		"https://files.slack.com.evil.example/x":        false,
		"https://evilslack.com/x":                       false,
		"http://127.0.0.1:5000/files-pri/F1/a":          true,
		"http://127.0.0.1:5001/x":                       false,
		"not a url":                                     false,
	} {
		if got := ch.slackHost(link); got != want {
			t.Errorf("slackHost(%q) = %v, want %v", link, got, want)
		}
	}
}
