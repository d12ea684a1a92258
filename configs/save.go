package configs

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/nanobot-go/nanobot/internal/atomicfile"
)

// Save writes c to path atomically with mode 0600. Strings that were loaded
// from "${VAR}" references (see Loaded.Save) are written back as references,
// never as their expanded values. It writes the whole file anew (every
// option, sorted, keys this build does not know dropped): to change a
// setting in the user's file, use PatchJSON.
func Save(path string, c *Config) error {
	return save(path, c, nil)
}

// Save writes the loaded config, changed or not, back to its file, anew
// as Save does.
func (l *Loaded) Save() error {
	return save(l.Path, &l.Config, l.expansions)
}

func save(path string, c *Config, expansions map[string]expansion) error {
	b, err := json.Marshal(c)
	if err != nil {
		return fmt.Errorf("config %s: encode: %w", path, err)
	}
	if len(expansions) > 0 {
		var tree map[string]any
		if err := json.Unmarshal(b, &tree); err != nil {
			return fmt.Errorf("config %s: encode: %w", path, err)
		}
		for p, e := range expansions {
			restoreRef(tree, p, e)
		}
		if b, err = json.Marshal(tree); err != nil {
			return fmt.Errorf("config %s: encode: %w", path, err)
		}
	}
	var out bytes.Buffer
	if err := json.Indent(&out, b, "", "  "); err != nil {
		return fmt.Errorf("config %s: encode: %w", path, err)
	}
	out.WriteByte('\n')
	if err := atomicfile.Write(path, out.Bytes(), 0o600); err != nil {
		return fmt.Errorf("config %s: save: %w", path, err)
	}
	return nil
}

type expansion struct {
	original, expanded string
}

// restoreRef puts e.original back at path when the value there is still the
// expanded text (a value the user changed since is kept).
func restoreRef(tree map[string]any, path string, e expansion) {
	var cur any = tree
	segs := splitPath(path)
	for i, s := range segs {
		last := i == len(segs)-1
		switch node := cur.(type) {
		case map[string]any:
			if last {
				if v, ok := node[s.key].(string); ok && v == e.expanded {
					node[s.key] = e.original
				}
				return
			}
			cur = node[s.key]
		case []any:
			if s.index < 0 || s.index >= len(node) {
				return
			}
			if last {
				if v, ok := node[s.index].(string); ok && v == e.expanded {
					node[s.index] = e.original
				}
				return
			}
			cur = node[s.index]
		default:
			return
		}
	}
}

type pathSeg struct {
	key   string
	index int // -1 for object keys
}

// splitPath splits "a.b[2].c" into segments. Keys containing dots are not
// supported (config keys never need them).
func splitPath(p string) []pathSeg {
	var out []pathSeg
	for _, part := range strings.Split(p, ".") {
		key, rest, _ := strings.Cut(part, "[")
		if key != "" {
			out = append(out, pathSeg{key: key, index: -1})
		}
		for rest != "" {
			num, after, _ := strings.Cut(rest, "]")
			n, err := strconv.Atoi(num)
			if err != nil {
				n = -2
			}
			out = append(out, pathSeg{index: n})
			rest = strings.TrimPrefix(after, "[")
		}
	}
	return out
}
