package configs

import (
	"fmt"
	"net/url"
	"regexp"
)

// SkillsConfig is the top-level skills section.
type SkillsConfig struct {
	// Registries are ClawHub-compatible skill registries, asked in order:
	// for a skill name the first that knows it wins. Unset: the public
	// ClawHub (https://clawhub.ai).
	Registries []SkillRegistry `json:"registries,omitempty"`
}

// SkillRegistry is one registry.
type SkillRegistry struct {
	// Name identifies it in skills/.lock.json and output.
	Name string `json:"name"`
	// URL is its base URL (without /api/v1).
	URL string `json:"url"`
	// Token, when set, is sent as a bearer token. Use "${ENV_VAR}".
	Token string `json:"token,omitempty"`
}

var registryNameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]*$`)

// skills checks the skills section and the agents' skill lists.
func (v *validator) skills(c *Config) {
	seen := map[string]bool{}
	for i, r := range c.Skills.Registries {
		p := fmt.Sprintf("skills.registries[%d]", i)
		v.require(registryNameRE.MatchString(r.Name), p+".name", "want lower-case letters, digits, \"-\" and \"_\", got %q", r.Name)
		v.require(!seen[r.Name], p+".name", "%q is used twice", r.Name)
		seen[r.Name] = true
		u, err := url.Parse(r.URL)
		v.require(err == nil && (u.Scheme == "https" || u.Scheme == "http") && u.Host != "", p+".url", "want an http(s) URL, got %q", r.URL)
	}
}
