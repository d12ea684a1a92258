package media

import (
	"errors"
	"strings"

	"github.com/nanobot-go/nanobot/bus"
)

// ErrNoSource is a bus.Media with neither a local path nor a URL.
var ErrNoSource = errors.New("media has neither a path nor a URL")

// Split sorts an outbound message's media for a platform that uploads
// files: those with a local Path are returned to upload, those with only a
// URL are appended to the text as links. A medium with neither is an
// ErrNoSource (the caller wraps it as a permanent error).
func Split(m bus.Outbound) (text string, files []bus.Media, err error) {
	text = strings.TrimSpace(m.Content)
	for _, md := range m.Media {
		switch {
		case md.Path != "":
			files = append(files, md)
		case md.URL != "":
			text = strings.TrimSpace(text + "\n" + md.URL)
		default:
			return "", nil, ErrNoSource
		}
	}
	return text, files, nil
}
