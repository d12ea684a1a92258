package api

import (
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"

	"github.com/nanobot-go/nanobot/channels/media"
	"github.com/nanobot-go/nanobot/internal/reqbody"
)

// form is a multipart/form-data request: a message with files, for clients
// that upload instead of embedding data URLs (curl -F, HTML forms, scripts).
type form struct {
	fields map[string]string
	files  []upload
}

// maxFormFiles bounds the files of one request.
const maxFormFiles = 16

// isMultipart reports whether r carries a multipart/form-data body.
func isMultipart(r *http.Request) bool {
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	return err == nil && mt == "multipart/form-data"
}

// readForm reads a multipart body of at most api.maxUploadBytes: text
// fields (each at most api.maxBodyBytes) and the parts named "files".
// Browsers may send multipart cross-site without a preflight, so a form
// that a browser submits as a navigation or a no-cors fetch is refused
// (scripts and SDKs send no Sec-Fetch-Mode; pages calling with fetch and
// CORS do, as "cors").
func (c *Channel) readForm(w http.ResponseWriter, r *http.Request) (*form, error) {
	if mode := r.Header.Get("Sec-Fetch-Mode"); mode != "" && mode != "cors" && mode != "same-origin" {
		return nil, &badRequest{msg: "multipart requests from a browser page must use fetch with CORS (Sec-Fetch-Mode " + mode + " refused)"}
	}
	r.Body = reqbody.Limit(w, r, c.cfg.MaxUploadBytes)
	mr, err := r.MultipartReader()
	if err != nil {
		return nil, &badRequest{msg: "invalid multipart body: " + err.Error()}
	}
	f := &form{fields: map[string]string{}}
	for {
		p, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			return f, nil
		}
		if err != nil {
			return nil, formErr(err)
		}
		name := p.FormName()
		if name == "files" || name == "files[]" {
			if len(f.files) == maxFormFiles {
				return nil, bad("files", "at most %d files per request", maxFormFiles)
			}
			data, err := io.ReadAll(p)
			if err != nil {
				return nil, formErr(err)
			}
			fn := p.FileName()
			if fn == "" {
				fn = "file"
			}
			f.files = append(f.files, upload{name: fn, mime: fileType(p.Header.Get("Content-Type"), data), data: data})
			continue
		}
		v, err := media.ReadCapped(p, c.cfg.MaxBodyBytes)
		if errors.Is(err, media.ErrTooLarge) {
			return nil, bad(name, "longer than %d bytes (api.maxBodyBytes)", c.cfg.MaxBodyBytes)
		}
		if err != nil {
			return nil, formErr(err)
		}
		f.fields[name] = string(v)
	}
}

func formErr(err error) error {
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		return &uploadTooLarge{limit: tooBig.Limit}
	}
	if reqbody.Status(err) == http.StatusRequestTimeout {
		return fmt.Errorf("read multipart body: %w", err) // answered 408
	}
	return &badRequest{msg: "invalid multipart body: " + err.Error()}
}

// uploadTooLarge is a multipart body over api.maxUploadBytes.
type uploadTooLarge struct{ limit int64 }

func (e *uploadTooLarge) Error() string {
	return fmt.Sprintf("upload is larger than %d bytes (api.maxUploadBytes)", e.limit)
}

// boolField reads a form field that holds a boolean ("true", "1", ...).
func (f *form) boolField(name string) (*bool, error) {
	v, ok := f.fields[name]
	if !ok || strings.TrimSpace(v) == "" {
		return nil, nil
	}
	b, err := strconv.ParseBool(strings.TrimSpace(v))
	if err != nil {
		return nil, bad(name, "want true or false, got %q", v)
	}
	return &b, nil
}
