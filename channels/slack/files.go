package slack

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/slack-go/slack"

	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/channels"
	"github.com/nanobot-go/nanobot/channels/media"
)

// download fetches the files a user shared into the media folder, so the
// agent gets local files (images go to the model inline). Slack serves
// them at url_private with the bot token as a bearer; the token is sent
// only to Slack's own hosts. Files from a sender the gate would refuse are
// not fetched; files that fail become a note in the text.
func (c *Channel) download(ctx context.Context, in channels.Inbox, m *bus.Inbound, files []slack.File) {
	var notes []string
	defer func() {
		if len(notes) > 0 {
			m.Content = strings.TrimSpace(strings.Join(append([]string{m.Content}, notes...), "\n"))
		}
	}()
	if c.mediaDir == "" || !channels.Admits(in, c.Name(), m.SenderID) {
		for _, f := range files {
			notes = append(notes, fmt.Sprintf("[file %s: not downloaded]", fileName(f)))
		}
		return
	}
	for i, f := range files {
		name := fileName(f)
		link := f.URLPrivateDownload
		if link == "" {
			link = f.URLPrivate
		}
		if int64(f.Size) > c.cfg.MaxMediaBytes {
			notes = append(notes, media.TooLarge("file "+name, int64(f.Size), c.cfg.MaxMediaBytes))
			continue
		}
		if !c.slackHost(link) {
			c.log.Warn("slack: shared file not on a Slack host; not downloaded", "message_id", m.MessageID, "file", f.ID)
			notes = append(notes, fmt.Sprintf("[file %s: not downloaded]", name))
			continue
		}
		data, err := media.Fetch(ctx, c.http, link, http.Header{"Authorization": {"Bearer " + c.cfg.BotToken}}, c.cfg.MaxMediaBytes)
		switch {
		case errors.Is(err, media.ErrTooLarge):
			notes = append(notes, media.TooLarge("file "+name, 0, c.cfg.MaxMediaBytes))
			continue
		case err != nil:
			c.log.Warn("slack: file download failed", "message_id", m.MessageID, "file", f.ID, "err", c.redact.Error(err))
			notes = append(notes, fmt.Sprintf("[file %s: download failed]", name))
			continue
		}
		mime := f.Mimetype
		if mime == "" {
			mime = http.DetectContentType(data)
		}
		saved, err := media.Save(c.mediaDir, fmt.Sprintf("%s_%s_%d%s", m.ChatID, m.MessageID, i, media.Ext(name, "", mime)), data)
		if err != nil {
			c.log.Warn("slack: saving a shared file failed", "err", err)
			notes = append(notes, fmt.Sprintf("[file %s: could not be saved]", name))
			continue
		}
		m.Media = append(m.Media, bus.Media{Path: saved, MIMEType: mime, Name: name, Size: int64(len(data))})
	}
}

// slackHost reports whether link is on a host the bot token may go to:
// https on slack.com or a subdomain, or the configured apiBase's host.
func (c *Channel) slackHost(link string) bool {
	u, err := url.Parse(link)
	if err != nil || u.Host == "" {
		return false
	}
	if u.Host == c.fileHost {
		return true
	}
	h := u.Hostname()
	return u.Scheme == "https" && (h == "slack.com" || strings.HasSuffix(h, ".slack.com"))
}

func fileName(f slack.File) string {
	for _, s := range []string{f.Name, f.Title, f.ID} {
		if s != "" {
			return s
		}
	}
	return "file"
}
