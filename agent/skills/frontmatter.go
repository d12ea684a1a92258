package skills

import (
	"bytes"
	"errors"
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"
)

// meta is the frontmatter of a SKILL.md.
//
//	---
//	name: github
//	description: Work with GitHub through the gh CLI.
//	always: false
//	requires: {bins: [gh], env: [GH_TOKEN]}
//	os: [linux, darwin]
//	homepage: https://cli.github.com
//	---
//
// Skills written for Python nanobot keep always/requires/os under
// metadata.nanobot (or metadata.openclaw); those are read too.
type meta struct {
	Name        string     `yaml:"name"`
	Description string     `yaml:"description"`
	Always      bool       `yaml:"always"`
	Requires    requires   `yaml:"requires"`
	OS          stringList `yaml:"os"`
	Homepage    string     `yaml:"homepage"`
	Metadata    yaml.Node  `yaml:"metadata"`
}

type requires struct {
	Bins stringList `yaml:"bins"`
	Env  stringList `yaml:"env"`
}

// legacyMeta is the part of Python nanobot's metadata block we use.
type legacyMeta struct {
	Always   bool       `yaml:"always"`
	Requires requires   `yaml:"requires"`
	OS       stringList `yaml:"os"`
}

// stringList accepts a YAML sequence of strings or a single string.
type stringList []string

func (l *stringList) UnmarshalYAML(n *yaml.Node) error {
	switch n.Kind {
	case yaml.ScalarNode:
		if n.Value != "" {
			*l = stringList{n.Value}
		}
		return nil
	case yaml.SequenceNode:
		var s []string
		if err := n.Decode(&s); err != nil {
			return err
		}
		*l = s
		return nil
	}
	return fmt.Errorf("line %d: want a string or a list of strings", n.Line)
}

// errNoFrontmatter is reported for a SKILL.md that does not start with a
// "---" block; the skill still loads, under its folder name.
var errNoFrontmatter = errors.New("no YAML frontmatter (the file should start with a --- line)")

// parse splits a SKILL.md into its frontmatter and its Markdown body.
func parse(data []byte) (meta, string, error) {
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf")) // UTF-8 BOM
	text := strings.ReplaceAll(string(data), "\r\n", "\n")
	if !strings.HasPrefix(text, "---\n") {
		return meta{}, strings.TrimSpace(text), errNoFrontmatter
	}
	rest := text[len("---\n"):]
	var front, body string
	found := false
	for off := 0; off <= len(rest); {
		end := strings.IndexByte(rest[off:], '\n')
		line := rest[off:]
		next := len(rest) + 1
		if end >= 0 {
			line, next = rest[off:off+end], off+end+1
		}
		if l := strings.TrimRight(line, " \t"); l == "---" || l == "..." {
			front, found = rest[:off], true
			if next <= len(rest) {
				body = rest[next:]
			}
			break
		}
		off = next
	}
	if !found {
		return meta{}, "", errors.New("frontmatter is not closed by a --- line")
	}
	var m meta
	if err := yaml.Unmarshal([]byte(front), &m); err != nil {
		return meta{}, "", fmt.Errorf("frontmatter: %w", err)
	}
	if err := m.mergeLegacy(); err != nil {
		return meta{}, "", fmt.Errorf("frontmatter metadata: %w", err)
	}
	return m, strings.TrimSpace(body), nil
}

// mergeLegacy reads metadata.nanobot / metadata.openclaw, given either as
// a mapping or as a JSON string, and fills what the top level left unset.
func (m *meta) mergeLegacy() error {
	n := &m.Metadata
	if n.Kind == 0 {
		return nil
	}
	if n.Kind == yaml.ScalarNode {
		var parsed yaml.Node
		if err := yaml.Unmarshal([]byte(n.Value), &parsed); err != nil {
			return err
		}
		if len(parsed.Content) == 0 {
			return nil
		}
		n = parsed.Content[0]
	}
	var blocks map[string]yaml.Node
	if err := n.Decode(&blocks); err != nil {
		return err
	}
	for _, key := range []string{"nanobot", "openclaw"} {
		b, ok := blocks[key]
		if !ok {
			continue
		}
		var l legacyMeta
		if err := b.Decode(&l); err != nil {
			return fmt.Errorf("%s: %w", key, err)
		}
		m.Always = m.Always || l.Always
		if len(m.Requires.Bins) == 0 {
			m.Requires.Bins = l.Requires.Bins
		}
		if len(m.Requires.Env) == 0 {
			m.Requires.Env = l.Requires.Env
		}
		if len(m.OS) == 0 {
			m.OS = l.OS
		}
		break
	}
	return nil
}

// osMatches reports whether a skill limited to oses runs on goos. Python
// nanobot spells macOS "darwin" and Windows "win32"; both spellings work.
func osMatches(oses []string, goos string) bool {
	if len(oses) == 0 {
		return true
	}
	for _, o := range oses {
		switch o = strings.ToLower(strings.TrimSpace(o)); o {
		case "macos", "mac", "osx":
			o = "darwin"
		case "win32", "win":
			o = "windows"
		}
		if o == goos {
			return true
		}
	}
	return false
}
