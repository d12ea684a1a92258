// Package media holds what every channel adapter needs to take files in
// from its platform: a download capped at a size limit, harmless local file
// names, and an atomic save into the gateway's media folder.
//
// Adapters download an attachment when a message arrives, save it under
// <media folder>/<platform>/ and hand the agent a bus.Media with its Path;
// the agent then reads images into the model's request and mentions other
// files by path.
package media

import (
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/nanobot-go/nanobot/internal/atomicfile"
)

// ErrTooLarge is returned by Fetch when the body is over the limit.
var ErrTooLarge = errors.New("media: file over the size limit")

// StatusError is a download answered with a status other than 200.
type StatusError struct{ Code int }

func (e *StatusError) Error() string { return fmt.Sprintf("media: download: HTTP %d", e.Code) }

// Fetch GETs url with client (nil = http.DefaultClient) and the given
// headers, and returns the body if it is at most limit bytes. It stops
// reading one byte past the limit, so an oversized or endless body costs
// no more than limit+1 bytes.
func Fetch(ctx context.Context, client *http.Client, url string, header http.Header, limit int64) ([]byte, error) {
	if client == nil {
		client = http.DefaultClient
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, fmt.Errorf("media: download: %w", err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, &StatusError{Code: resp.StatusCode}
	}
	if resp.ContentLength > limit {
		return nil, ErrTooLarge
	}
	return ReadCapped(resp.Body, limit)
}

// ReadCapped reads r to the end if it holds at most limit bytes; it stops
// one byte past the limit with ErrTooLarge.
func ReadCapped(r io.Reader, limit int64) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, ErrTooLarge
	}
	return data, nil
}

// SafeName keeps a file-name part to letters, digits, '.', '-' and '_'
// (everything else, path separators included, becomes '_'), so a name
// chosen by a remote user cannot surprise a shell. Save also strips leading
// dots from the whole name, so it cannot be "..", or hidden.
func SafeName(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '.' || r == '-' || r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' {
			return r
		}
		return '_'
	}, s)
}

// Ext picks a file extension: the name's own, else the remote path's, else
// one registered for the MIME type ("" when none is known).
func Ext(name, remotePath, mimeType string) string {
	if e := path.Ext(name); e != "" {
		return e
	}
	if e := path.Ext(remotePath); e != "" {
		return e
	}
	if exts, _ := mime.ExtensionsByType(mimeType); len(exts) > 0 {
		return exts[0]
	}
	return ""
}

// Save writes data to dir/name atomically (a temporary file renamed into
// place), creating dir (0700) if needed. The file is readable by the owner
// only. name is passed through SafeName and loses its leading dots.
func Save(dir, name string, data []byte) (string, error) {
	name = strings.TrimLeft(SafeName(name), ".")
	if name == "" {
		return "", errors.New("media: save: empty file name")
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("media: save: %w", err)
	}
	file := filepath.Join(dir, name)
	if err := (atomicfile.Options{NoSync: true}).Write(file, data, 0o600); err != nil {
		return "", fmt.Errorf("media: save: %w", err)
	}
	return file, nil
}

// Size formats a byte count for messages to the model ("1.5 MB",
// "12.0 KB", "900 bytes").
func Size(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}

// TooLarge is the note an inbound message carries instead of an attachment
// over the download limit, so the agent knows a file came:
// "[attachment a.iso: too large to download (3.0 MB, limit 1.0 MB)]". A size
// of 0 or less is one the platform did not tell (the download ran into the
// limit) and is left out.
func TooLarge(label string, size, limit int64) string {
	if size <= 0 {
		return "[" + label + ": too large to download (over the limit of " + Size(limit) + ")]"
	}
	return "[" + label + ": too large to download (" + Size(size) + ", limit " + Size(limit) + ")]"
}
