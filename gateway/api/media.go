package api

import (
	"encoding/base64"
	"fmt"
	"mime"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/nanobot-go/nanobot/bus"
	"github.com/nanobot-go/nanobot/channels/media"
)

// upload is a file a request carries (an image data URL or a multipart
// file), checked but not yet saved.
type upload struct {
	name string
	mime string
	data []byte
}

// imageFromURL reads an image given as a data URL ("data:image/png;base64,
// ..."). Remote URLs are refused: the gateway does not fetch what a client
// points it at (it could be an address only the gateway reaches).
func imageFromURL(param, url string) (upload, error) {
	rest, ok := strings.CutPrefix(url, "data:")
	if !ok {
		if strings.HasPrefix(url, "http://") || strings.HasPrefix(url, "https://") {
			return upload{}, bad(param, "remote image URLs are not fetched; send the image as a data URL (data:image/png;base64,...) or as a multipart file")
		}
		return upload{}, bad(param, "want a data URL (data:image/png;base64,...)")
	}
	meta, payload, ok := strings.Cut(rest, ",")
	mt, isBase64 := strings.CutSuffix(meta, ";base64")
	if !ok || !isBase64 {
		return upload{}, bad(param, "want a base64 data URL (data:image/png;base64,...)")
	}
	data, err := base64.StdEncoding.DecodeString(payload)
	if err != nil {
		return upload{}, bad(param, "invalid base64 in the data URL")
	}
	if !strings.HasPrefix(mt, "image/") {
		return upload{}, bad(param, "want an image data URL, got type %q", mt)
	}
	if sniffed := http.DetectContentType(data); !strings.HasPrefix(sniffed, "image/") {
		return upload{}, bad(param, "the data is not an image (it looks like %s)", sniffed)
	}
	return upload{name: "image", mime: mt, data: data}, nil
}

// fileType is the MIME type an uploaded file is passed on with: what its
// bytes look like when that is an image (so a file declared as an image
// but holding something else is not sent to the model as one), else the
// declared type, else a generic one.
func fileType(declared string, data []byte) string {
	if sniffed := http.DetectContentType(data); strings.HasPrefix(sniffed, "image/") {
		return sniffed
	}
	mt, _, err := mime.ParseMediaType(declared)
	if err != nil || mt == "" || strings.HasPrefix(mt, "image/") || strings.HasPrefix(mt, "multipart/") {
		return "application/octet-stream"
	}
	return mt
}

// inboundDir is where uploads are saved, under the media folder.
const inboundDir = "inbound"

// save writes a request's uploads to the media folder (0600, atomically)
// and returns them as attachments. On failure nothing it wrote stays.
func (c *Channel) save(reqID string, ups []upload) ([]bus.Media, error) {
	if len(ups) == 0 {
		return nil, nil
	}
	if c.cfg.MediaDir == "" {
		return nil, fmt.Errorf("api: no media folder to save %d upload(s) in", len(ups))
	}
	dir := filepath.Join(c.cfg.MediaDir, inboundDir)
	var out []bus.Media
	for i, u := range ups {
		base := strings.TrimSuffix(u.name, filepath.Ext(u.name))
		name := fmt.Sprintf("%s-%d-%s%s", reqID, i, base, media.Ext(u.name, "", u.mime))
		path, err := media.Save(dir, name, u.data)
		if err != nil {
			for _, m := range out {
				_ = os.Remove(m.Path)
			}
			return nil, fmt.Errorf("api: %w", err)
		}
		out = append(out, bus.Media{Path: path, MIMEType: u.mime, Name: u.name, Size: int64(len(u.data))})
	}
	return out, nil
}
