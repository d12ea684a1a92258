// Package registrytest is a fake ClawHub-compatible registry for tests: the
// v1 endpoints package registry uses, served from memory by httptest.
//
// A Server is safe for concurrent use; tests may add versions while it
// serves.
package registrytest

import (
	"archive/zip"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// Version is one published version: its archive, and the sha256 the
// registry advertises ("" = the archive's own; "-" = none).
type Version struct {
	Version   string
	Archive   []byte
	Advertise string
}

// Server is the fake registry.
type Server struct {
	*httptest.Server
	mu     sync.Mutex
	skills map[string][]Version // newest last
	// Token, when set, is required as a bearer token.
	Token string
	// PageSize, when set, splits the versions listing into pages of this
	// many, linked by "nextCursor" as ClawHub's listings are.
	PageSize int
	flags    map[string]Moderation
}

// Moderation is the registry's verdict on a skill, as ClawHub's skill
// metadata carries it ("moderation": {"isMalwareBlocked", "isSuspicious"}).
type Moderation struct {
	MalwareBlocked, Suspicious bool
}

// Flag sets the moderation verdict the metadata of slug carries.
func (s *Server) Flag(slug string, m Moderation) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.flags == nil {
		s.flags = map[string]Moderation{}
	}
	s.flags[slug] = m
}

// New starts a fake registry closed at the end of the test.
func New(t testing.TB) *Server {
	s := &Server{skills: map[string][]Version{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/v1/search", s.search)
	mux.HandleFunc("GET /api/v1/skills/{slug}", s.meta)
	mux.HandleFunc("GET /api/v1/skills/{slug}/versions", s.versions)
	mux.HandleFunc("GET /api/v1/download", s.download)
	s.Server = httptest.NewServer(s.auth(mux))
	t.Cleanup(s.Close)
	return s
}

// Publish adds a version of slug.
func (s *Server) Publish(slug string, v Version) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.skills[slug] = append(s.skills[slug], v)
}

// Zip builds a zip of files (path -> content).
func Zip(t testing.TB, files map[string]string) []byte {
	var b bytes.Buffer
	w := zip.NewWriter(&b)
	for name, body := range files {
		f, err := w.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		f.Write([]byte(body))
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// Skill is the SKILL.md of a test skill.
func Skill(name, desc string) string {
	return "---\nname: " + name + "\ndescription: " + desc + "\n---\n\n# " + name + "\n\nDo things.\n"
}

func (s *Server) auth(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.Token != "" && r.Header.Get("Authorization") != "Bearer "+s.Token {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	})
}

func (s *Server) search(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	q := strings.ToLower(r.URL.Query().Get("q"))
	type hit struct {
		Slug        string  `json:"slug"`
		DisplayName string  `json:"displayName"`
		Summary     string  `json:"summary"`
		Version     string  `json:"version"`
		Score       float64 `json:"score"`
	}
	out := struct {
		Results []hit `json:"results"`
	}{Results: []hit{}}
	for slug, vs := range s.skills {
		if strings.Contains(slug, q) {
			out.Results = append(out.Results, hit{slug, slug, "The " + slug + " skill", vs[len(vs)-1].Version, 1})
		}
	}
	json.NewEncoder(w).Encode(out)
}

func (s *Server) meta(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	slug := r.PathValue("slug")
	vs, ok := s.skills[slug]
	if !ok {
		http.NotFound(w, r)
		return
	}
	body := map[string]any{
		"skill":         map[string]any{"slug": slug, "displayName": slug, "summary": "The " + slug + " skill"},
		"latestVersion": map[string]any{"version": vs[len(vs)-1].Version},
	}
	if m, ok := s.flags[slug]; ok {
		body["moderation"] = map[string]any{"isMalwareBlocked": m.MalwareBlocked, "isSuspicious": m.Suspicious}
	}
	json.NewEncoder(w).Encode(body)
}

func (s *Server) versions(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	vs, ok := s.skills[r.PathValue("slug")]
	if !ok {
		http.NotFound(w, r)
		return
	}
	items := []map[string]any{}
	for i := len(vs) - 1; i >= 0; i-- {
		item := map[string]any{"version": vs[i].Version}
		switch vs[i].Advertise {
		case "":
			sum := sha256.Sum256(vs[i].Archive)
			item["sha256"] = hex.EncodeToString(sum[:])
		case "-":
		default:
			item["sha256"] = vs[i].Advertise
		}
		items = append(items, item)
	}
	var next any // JSON null on the last page
	if s.PageSize > 0 {
		from, _ := strconv.Atoi(r.URL.Query().Get("cursor"))
		from = min(max(from, 0), len(items))
		to := min(from+s.PageSize, len(items))
		if to < len(items) {
			next = strconv.Itoa(to)
		}
		items = items[from:to]
	}
	json.NewEncoder(w).Encode(map[string]any{"items": items, "nextCursor": next})
}

func (s *Server) download(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	slug, ver := r.URL.Query().Get("slug"), r.URL.Query().Get("version")
	for _, v := range s.skills[slug] {
		if v.Version == ver || ver == "" {
			w.Header().Set("Content-Type", "application/zip")
			w.Write(v.Archive)
			return
		}
	}
	http.NotFound(w, r)
}
