package webui

import (
	"cmp"
	"context"
	"net/http"
	"os"
	"path/filepath"
	"slices"

	"github.com/nanobot-go/nanobot/agent/memory"
	"github.com/nanobot-go/nanobot/agent/skills"
)

const (
	// memoryCapTokens is the consolidator's default MEMORY.md budget: over
	// it, the next consolidation moves the oldest sections to HISTORY.md.
	memoryCapTokens = 8000
	maxMemoryBytes  = 256 << 10
)

func (s *Server) memoryPath(w http.ResponseWriter) string {
	return s.workspaceFile(w, "memory", "MEMORY.md")
}

func memoryView(content string) map[string]any {
	tokens := memory.EstimateText(content)
	return map[string]any{"content": content, "tokens": tokens, "capTokens": memoryCapTokens, "overCap": tokens > memoryCapTokens}
}

// getMemory is GET /api/memory: MEMORY.md with its size against the cap.
func (s *Server) getMemory(w http.ResponseWriter, _ *http.Request) {
	p := s.memoryPath(w)
	if p == "" {
		return
	}
	content, ok := s.readWorkspaceFile(w, p)
	if !ok {
		return
	}
	writeJSON(w, http.StatusOK, memoryView(content))
}

// putMemory is PUT /api/memory {"content"}: replaces MEMORY.md atomically,
// under the cluster's memory lock when there is one.
func (s *Server) putMemory(w http.ResponseWriter, r *http.Request) {
	p := s.memoryPath(w)
	if p == "" {
		return
	}
	content, ok := readContent(w, r, maxMemoryBytes/2, "MEMORY.md may be at most 128 KiB here")
	if !ok {
		return
	}
	if s.o.MemoryLock != nil {
		ctx, cancel := context.WithTimeout(r.Context(), maxLockWait)
		defer cancel()
		held, release, err := s.o.MemoryLock(ctx)
		if err != nil {
			writeError(w, http.StatusConflict, "", "memory is being consolidated; try again in a moment")
			return
		}
		defer release()
		if held.Err() != nil {
			// Lost between taking it and writing (NATS unreachable).
			writeError(w, http.StatusServiceUnavailable, "", "the memory lock was lost; try again in a moment")
			return
		}
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		writeError(w, http.StatusInternalServerError, "", "could not create the memory folder")
		return
	}
	if !s.writeWorkspaceFile(w, p, content) {
		return
	}
	s.log.Info("workbench: MEMORY.md edited", "bytes", len(content))
	writeJSON(w, http.StatusOK, memoryView(content))
}

type skillView struct {
	Name        string   `json:"name"`
	Description string   `json:"description"`
	Source      string   `json:"source"`
	Version     string   `json:"version,omitempty"`
	Always      bool     `json:"always"`
	Available   bool     `json:"available"`
	Missing     []string `json:"missing"`
	Requires    []string `json:"requires"`
}

// listSkills is GET /api/skills: every skill with its requirements met or
// missing, and the SKILL.md files that could not be loaded.
func (s *Server) listSkills(w http.ResponseWriter, _ *http.Request) {
	if s.workspaceFile(w) == "" {
		return
	}
	l := skills.New(skills.Options{Workspace: s.o.Workspace, Logger: s.log})
	out := []skillView{}
	for _, sk := range l.Skills() {
		v := skillView{Name: sk.Name, Description: sk.Description, Source: sk.Source, Version: sk.Version, Always: sk.Always,
			Available: sk.Available(), Missing: append([]string{}, sk.Missing...), Requires: []string{}}
		for _, b := range sk.Bins {
			v.Requires = append(v.Requires, "bin:"+b)
		}
		for _, e := range sk.Env {
			v.Requires = append(v.Requires, "env:"+e)
		}
		out = append(out, v)
	}
	slices.SortFunc(out, func(a, b skillView) int {
		if a.Available != b.Available {
			if a.Available {
				return -1
			}
			return 1
		}
		return cmp.Compare(a.Name, b.Name)
	})
	problems := []apiError{}
	for _, p := range l.Problems() {
		problems = append(problems, apiError{Path: filepath.Base(filepath.Dir(p.Path)), Error: p.Err.Error()})
	}
	writeJSON(w, http.StatusOK, map[string]any{"skills": out, "problems": problems})
}
