package webui

import (
	"errors"
	"net/http"
	"strings"

	"github.com/nanobot-go/nanobot/agent/skills/registry"
)

// registryResult is one search hit as the page shows it.
type registryResult struct {
	Name     string `json:"name"`
	Title    string `json:"title"`
	Summary  string `json:"summary"`
	Version  string `json:"version"`
	Registry string `json:"registry"`
}

// installer is the skill installer, or the 503 saying there is none.
func (s *Server) installer(w http.ResponseWriter) *registry.Installer {
	if s.o.SkillInstaller == nil {
		writeError(w, http.StatusServiceUnavailable, "", "this gateway installs no skills from a registry")
	}
	return s.o.SkillInstaller
}

// searchSkills is GET /api/skills/registry?q=: the registries' hits.
func (s *Server) searchSkills(w http.ResponseWriter, r *http.Request) {
	in := s.installer(w)
	if in == nil {
		return
	}
	q := strings.TrimSpace(r.URL.Query().Get("q"))
	if q == "" || len(q) > 200 {
		writeError(w, http.StatusBadRequest, "q", "search for 1 to 200 characters")
		return
	}
	hits, err := in.Client.Search(r.Context(), q, 20)
	if err != nil {
		writeError(w, http.StatusBadGateway, "", err.Error())
		return
	}
	out := make([]registryResult, 0, len(hits))
	for _, h := range hits {
		out = append(out, registryResult{Name: h.Slug, Title: h.DisplayName, Summary: h.Summary, Version: h.Version, Registry: h.Registry})
	}
	writeJSON(w, http.StatusOK, map[string]any{"results": out})
}

// installSkill is POST /api/skills/install {"name", "version"}: downloads,
// verifies (hash) and installs it, or updates an installed one; the
// answer lists what changed.
func (s *Server) installSkill(w http.ResponseWriter, r *http.Request) {
	in := s.installer(w)
	if in == nil {
		return
	}
	var body struct {
		Name    string `json:"name"`
		Version string `json:"version"`
	}
	if !readJSON(w, r, &body) {
		return
	}
	if !registry.ValidSlug(body.Name) {
		writeError(w, http.StatusBadRequest, "name", "not a skill name")
		return
	}
	c, err := in.Prepare(r.Context(), body.Name, body.Version, "")
	var mismatch *registry.HashMismatchError
	var blocked *registry.BlockedError
	switch {
	case errors.As(err, &mismatch):
		writeError(w, http.StatusBadGateway, "", err.Error()+"; nothing was installed")
		return
	case errors.As(err, &blocked):
		writeError(w, http.StatusUnprocessableEntity, "name", err.Error())
		return
	case err != nil:
		writeError(w, http.StatusBadGateway, "", err.Error())
		return
	}
	if err := in.Apply(c); err != nil {
		in.Discard(c)
		s.internalError(w, "install skill", err, "could not install the skill; nothing changed")
		return
	}
	s.log.Info("workbench: skill installed", "skill", c.Slug, "version", c.To.Version, "from", c.From.Version)
	writeJSON(w, http.StatusOK, map[string]any{"name": c.Slug, "version": c.To.Version, "from": c.From.Version,
		"added": orEmpty(c.Added), "removed": orEmpty(c.Removed), "changed": orEmpty(c.Changed), "suspicious": c.Suspicious})
}

// removeSkill is DELETE /api/skills/{name}: removes a skill installed from
// a registry (a folder written by hand is never removed from here).
func (s *Server) removeSkill(w http.ResponseWriter, r *http.Request) {
	in := s.installer(w)
	if in == nil {
		return
	}
	name := r.PathValue("name")
	if err := in.Remove(name); err != nil {
		if errors.Is(err, registry.ErrNotInstalled) {
			writeError(w, http.StatusNotFound, "name", name+" was not installed from a registry")
			return
		}
		s.internalError(w, "remove skill", err, "could not remove the skill")
		return
	}
	s.log.Info("workbench: skill removed", "skill", name)
	writeJSON(w, http.StatusOK, map[string]any{"removed": name})
}

func orEmpty(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
