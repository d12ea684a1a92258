package configs

// A migration moves a key from an older location to its current one. It
// changes the in-memory tree only; the file is rewritten by onboard or an
// explicit save, never as a side effect of loading.
type migration struct {
	from, to []string
}

var migrations = []migration{
	// nanobot moved restrictToWorkspace from exec to the tools level.
	{from: []string{"tools", "exec", "restrictToWorkspace"}, to: []string{"tools", "restrictToWorkspace"}},
	// Older releases kept the heartbeat at the top level.
	{from: []string{"heartbeat"}, to: []string{"gateway", "heartbeat"}},
	// Older releases named the SSRF allowlist a whitelist.
	{from: []string{"tools", "ssrfWhitelist"}, to: []string{"tools", "ssrfAllowlist"}},
}

// migrate applies every migration to tree and describes what it moved.
// When both locations are set the current one wins and the old key is
// dropped.
func migrate(tree map[string]any) []string {
	var done []string
	for _, m := range migrations {
		parent := lookupMap(tree, m.from[:len(m.from)-1], false)
		if parent == nil {
			continue
		}
		oldKey, ok := findKey(parent, m.from[len(m.from)-1])
		if !ok {
			continue
		}
		v := parent[oldKey]
		delete(parent, oldKey)
		dst := lookupMap(tree, m.to[:len(m.to)-1], true)
		newKey := m.to[len(m.to)-1]
		if dst == nil {
			continue
		}
		if _, exists := findKey(dst, newKey); !exists {
			dst[newKey] = v
		}
		done = append(done, dotted(m.from)+" -> "+dotted(m.to))
	}
	return done
}

// lookupMap walks path through nested objects, creating them when create is
// set. It returns nil when a step is missing or not an object.
func lookupMap(tree map[string]any, path []string, create bool) map[string]any {
	cur := tree
	for _, want := range path {
		k, found := findKey(cur, want)
		if !found {
			k = want
		}
		next, ok := cur[k].(map[string]any)
		if !ok {
			if !create || cur[k] != nil {
				return nil
			}
			next = map[string]any{}
			cur[k] = next
		}
		cur = next
	}
	return cur
}

func dotted(path []string) string {
	s := ""
	for _, p := range path {
		s = join(s, p)
	}
	return s
}

// findKey finds the key of m that spells want in any accepted form
// (camelCase, snake_case, other case).
func findKey(m map[string]any, want string) (string, bool) {
	if _, ok := m[want]; ok {
		return want, true
	}
	n := normKey(want)
	for k := range m {
		if normKey(k) == n {
			return k, true
		}
	}
	return "", false
}
