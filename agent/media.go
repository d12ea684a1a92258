package agent

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"os"
)

// dataURL reads an image file into a data: URL, refusing files over max.
func dataURL(path, mime string, max int64) (string, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return "", err
	}
	if fi.Size() > max {
		return "", fmt.Errorf("image %s is %d bytes, over the %d limit", path, fi.Size(), max)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	if mime == "" || mime == "application/octet-stream" {
		mime = http.DetectContentType(data)
	}
	return "data:" + mime + ";base64," + base64.StdEncoding.EncodeToString(data), nil
}
