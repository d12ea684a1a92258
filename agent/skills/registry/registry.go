// Package registry talks to ClawHub-compatible skill registries and
// installs skills from them into a workspace's skills/ folder.
//
// The HTTP API is ClawHub's public v1 API, as its own CLI and the clients
// of PicoClaw and others use it (all GET, JSON unless noted, optional
// "Authorization: Bearer <token>"):
//
//	/api/v1/search?q=Q&limit=N      {"results":[{"slug","displayName","summary","version","score"}]}
//	/api/v1/skills/SLUG             {"skill":{"slug","displayName","summary"},"latestVersion":{"version"}}
//	                                (the fields of "skill" may also be at the top level)
//	/api/v1/skills/SLUG/versions    {"items":[{"version","createdAt","changelog","sha256"?}],"nextCursor"}
//	                                (pages: ?cursor=<nextCursor> until it is null or absent)
//	/api/v1/download?slug=S&version=V  the version's archive (zip; gzip'd tar accepted)
//
// "sha256" on a version is optional; when a registry gives it, the archive
// must match. Several registries may be configured: for a slug the first
// that knows it wins, search merges their results in order.
//
// Installs (Installer) are pinned in skills/.lock.json by version, archive
// hash and extracted-tree hash (see package skills), are extracted into a
// temporary folder beside the target and renamed into place, and never
// write outside the skills folder.
//
// A Client and an Installer are safe for concurrent use; two installs into
// one workspace at once are serialised only by the lock file's update.
package registry

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// DefaultURL is the public ClawHub registry.
const DefaultURL = "https://clawhub.ai"

// Limits on what a registry may send.
const (
	maxJSON    = 2 << 20  // a JSON answer
	MaxArchive = 20 << 20 // a downloaded archive
)

// Registry is one configured registry.
type Registry struct {
	// Name identifies it in the lock file and output ("clawhub").
	Name string
	// URL is its base URL, without /api/v1.
	URL string
	// Token, when set, is sent as a bearer token.
	Token string
}

// ErrNotFound is returned when no registry knows a skill or version.
var ErrNotFound = errors.New("not found in any registry")

// UnavailableError is a registry that could not be reached or answered
// with a server error.
type UnavailableError struct {
	Registry string
	URL      string
	Err      error
}

func (e *UnavailableError) Error() string {
	return fmt.Sprintf("registry %s (%s) is unavailable: %v", e.Registry, e.URL, e.Err)
}

func (e *UnavailableError) Unwrap() error { return e.Err }

// Result is one search hit.
type Result struct {
	Slug, DisplayName, Summary, Version string
	Score                               float64
	Registry                            string
}

// Meta describes a skill.
type Meta struct {
	Slug, DisplayName, Summary string
	Latest                     string
	Registry                   string
	// MalwareBlocked and Suspicious are the registry's moderation verdict
	// (ClawHub's "moderation" object): a blocked skill is never
	// installed, a suspicious one is installed with a warning.
	MalwareBlocked, Suspicious bool
}

// Version is one published version of a skill.
type Version struct {
	Version   string `json:"version"`
	Changelog string `json:"changelog,omitempty"`
	// SHA256 is the archive's hex sha256, when the registry gives it.
	SHA256 string `json:"sha256,omitempty"`
}

// Client queries the configured registries in order.
type Client struct {
	regs []Registry
	http *http.Client
}

// New returns a client of regs (none: the public ClawHub). hc nil: a client
// with a 30s timeout.
func New(regs []Registry, hc *http.Client) *Client {
	if len(regs) == 0 {
		regs = []Registry{{Name: "clawhub", URL: DefaultURL}}
	}
	if hc == nil {
		hc = &http.Client{Timeout: 30 * time.Second}
	}
	return &Client{regs: regs, http: hc}
}

// ValidSlug reports whether s can name a skill folder: lower-case letters,
// digits, ".", "-" and "_", not starting with a dot.
func ValidSlug(s string) bool {
	if len(s) == 0 || len(s) > 64 || strings.Contains(s, "..") {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		alnum := c >= 'a' && c <= 'z' || c >= '0' && c <= '9'
		if !alnum && (i == 0 || c != '.' && c != '_' && c != '-') {
			return false
		}
	}
	return true
}

// Search asks every registry and returns their hits in registry order, a
// slug found twice kept from the first. It fails only when no registry
// answered.
func (c *Client) Search(ctx context.Context, q string, limit int) ([]Result, error) {
	var out []Result
	var errs []error
	seen := map[string]bool{}
	for _, r := range c.regs {
		v := url.Values{"q": {q}}
		if limit > 0 {
			v.Set("limit", fmt.Sprint(limit))
		}
		var resp struct {
			Results []struct {
				Slug, DisplayName, Summary, Version string
				Score                               float64
			} `json:"results"`
		}
		if err := c.getJSON(ctx, r, "/api/v1/search?"+v.Encode(), &resp); err != nil {
			errs = append(errs, err)
			continue
		}
		for _, h := range resp.Results {
			if h.Slug == "" || seen[h.Slug] {
				continue
			}
			seen[h.Slug] = true
			out = append(out, Result{Slug: h.Slug, DisplayName: h.DisplayName, Summary: h.Summary,
				Version: h.Version, Score: h.Score, Registry: r.Name})
		}
	}
	if len(errs) == len(c.regs) {
		return nil, errors.Join(errs...)
	}
	return out, nil
}

// Meta returns a skill's description from the first registry that knows
// it, and that registry.
func (c *Client) Meta(ctx context.Context, slug string) (Meta, error) {
	var m Meta
	_, err := c.first(ctx, slug, func(r Registry) error {
		var resp struct {
			Slug, DisplayName, Summary string
			Skill                      *struct{ Slug, DisplayName, Summary string } `json:"skill"`
			LatestVersion              *struct{ Version string }                    `json:"latestVersion"`
			Moderation                 *struct {
				IsMalwareBlocked bool `json:"isMalwareBlocked"`
				IsSuspicious     bool `json:"isSuspicious"`
			} `json:"moderation"`
		}
		if err := c.getJSON(ctx, r, "/api/v1/skills/"+url.PathEscape(slug), &resp); err != nil {
			return err
		}
		m = Meta{Slug: resp.Slug, DisplayName: resp.DisplayName, Summary: resp.Summary, Registry: r.Name}
		if resp.Skill != nil {
			m.Slug, m.DisplayName, m.Summary = resp.Skill.Slug, resp.Skill.DisplayName, resp.Skill.Summary
		}
		if m.Slug == "" {
			m.Slug = slug
		}
		if resp.LatestVersion != nil {
			m.Latest = resp.LatestVersion.Version
		}
		if mod := resp.Moderation; mod != nil {
			m.MalwareBlocked, m.Suspicious = mod.IsMalwareBlocked, mod.IsSuspicious
		}
		return nil
	})
	return m, err
}

// Versions lists a skill's versions in the named registry (newest first,
// as the registry orders them), following the listing's pages up to
// maxVersionPages.
func (c *Client) Versions(ctx context.Context, registry, slug string) ([]Version, error) {
	r, err := c.named(registry)
	if err != nil {
		return nil, err
	}
	var all []Version
	cursor := ""
	for range maxVersionPages {
		path := "/api/v1/skills/" + url.PathEscape(slug) + "/versions"
		if cursor != "" {
			path += "?" + url.Values{"cursor": {cursor}}.Encode()
		}
		var resp struct {
			Items      []Version `json:"items"`
			NextCursor *string   `json:"nextCursor"`
		}
		if err := c.getJSON(ctx, r, path, &resp); err != nil {
			return nil, err
		}
		all = append(all, resp.Items...)
		if resp.NextCursor == nil || *resp.NextCursor == "" || *resp.NextCursor == cursor || len(resp.Items) == 0 {
			return all, nil
		}
		cursor = *resp.NextCursor
	}
	return all, nil // a registry with more pages than this is cut short
}

// maxVersionPages bounds the pages of one versions listing.
const maxVersionPages = 20

// Download returns the archive of slug@version from the named registry,
// at most MaxArchive bytes.
func (c *Client) Download(ctx context.Context, registry, slug, version string) ([]byte, error) {
	r, err := c.named(registry)
	if err != nil {
		return nil, err
	}
	v := url.Values{"slug": {slug}, "version": {version}}
	body, err := c.get(ctx, r, "/api/v1/download?"+v.Encode(), MaxArchive)
	if err != nil {
		return nil, fmt.Errorf("download %s@%s: %w", slug, version, err)
	}
	return body, nil
}

func (c *Client) named(name string) (Registry, error) {
	for _, r := range c.regs {
		if r.Name == name {
			return r, nil
		}
	}
	return Registry{}, fmt.Errorf("no registry named %q in skills.registries", name)
}

// first runs fn on each registry until one succeeds; a 404 moves on, any
// other failure too but is reported if nobody knows the slug.
func (c *Client) first(ctx context.Context, slug string, fn func(Registry) error) (Registry, error) {
	if !ValidSlug(slug) {
		return Registry{}, fmt.Errorf("%q is not a valid skill name", slug)
	}
	var errs []error
	for _, r := range c.regs {
		err := fn(r)
		if err == nil {
			return r, nil
		}
		if !errors.Is(err, ErrNotFound) {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return Registry{}, errors.Join(errs...)
	}
	return Registry{}, fmt.Errorf("skill %s: %w", slug, ErrNotFound)
}

func (c *Client) getJSON(ctx context.Context, r Registry, path string, v any) error {
	body, err := c.get(ctx, r, path, maxJSON)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("registry %s: %s: bad answer: %w", r.Name, path, err)
	}
	return nil
}

func (c *Client) get(ctx context.Context, r Registry, path string, limit int64) ([]byte, error) {
	u := strings.TrimRight(r.URL, "/") + path
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, fmt.Errorf("registry %s: %w", r.Name, err)
	}
	if r.Token != "" {
		req.Header.Set("Authorization", "Bearer "+r.Token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, &UnavailableError{Registry: r.Name, URL: r.URL, Err: err}
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	switch {
	case err != nil:
		return nil, &UnavailableError{Registry: r.Name, URL: r.URL, Err: err}
	case resp.StatusCode == http.StatusNotFound:
		return nil, fmt.Errorf("registry %s: %w", r.Name, ErrNotFound)
	case resp.StatusCode >= 500:
		return nil, &UnavailableError{Registry: r.Name, URL: r.URL, Err: fmt.Errorf("HTTP %d", resp.StatusCode)}
	case resp.StatusCode != http.StatusOK:
		return nil, fmt.Errorf("registry %s: %s: HTTP %d: %s", r.Name, path, resp.StatusCode, snippet(body))
	case int64(len(body)) > limit:
		return nil, fmt.Errorf("registry %s: %s: answer larger than %d bytes", r.Name, path, limit)
	}
	return body, nil
}

func snippet(b []byte) string {
	s := strings.TrimSpace(string(b))
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}
