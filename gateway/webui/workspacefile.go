package webui

import (
	"errors"
	"net/http"
	"os"
	"path/filepath"

	"github.com/nanobot-go/nanobot/internal/atomicfile"
)

// The workbench shows and edits a few Markdown files of the workspace
// (HEARTBEAT.md, memory/MEMORY.md). These helpers find, read and write
// them; when they fail they have answered the request already.

// workspaceFile is the path of rel under the workspace, or "" after a 503
// when this instance has no workspace.
func (s *Server) workspaceFile(w http.ResponseWriter, rel ...string) string {
	if s.o.Workspace == "" {
		writeError(w, http.StatusServiceUnavailable, "", "this gateway instance has no workspace")
		return ""
	}
	return filepath.Join(append([]string{s.o.Workspace}, rel...)...)
}

// readWorkspaceFile reads the file at p; a missing file reads as empty.
func (s *Server) readWorkspaceFile(w http.ResponseWriter, p string) (content string, ok bool) {
	b, err := os.ReadFile(p)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		name := filepath.Base(p)
		s.internalError(w, "read "+name, err, "could not read "+name)
		return "", false
	}
	return string(b), true
}

// readContent decodes a PUT body {"content"}, refusing more than max bytes
// with tooBig.
func readContent(w http.ResponseWriter, r *http.Request, max int, tooBig string) (content string, ok bool) {
	var body struct {
		Content string `json:"content"`
	}
	if !readJSON(w, r, &body) {
		return "", false
	}
	if len(body.Content) > max {
		writeError(w, http.StatusBadRequest, "content", tooBig)
		return "", false
	}
	return body.Content, true
}

// writeWorkspaceFile replaces the file at p atomically.
func (s *Server) writeWorkspaceFile(w http.ResponseWriter, p, content string) bool {
	if err := atomicfile.Write(p, []byte(content), 0o644); err != nil {
		name := filepath.Base(p)
		s.internalError(w, "write "+name, err, "could not write "+name)
		return false
	}
	return true
}
