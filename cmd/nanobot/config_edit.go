package main

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"

	"github.com/nanobot-go/nanobot/internal/atomicfile"
)

// editConfig changes the config file through its own JSON tree, so
// everything else in it (its ${VAR} references, keys this build does not
// know) stays as written. fn edits tree and reports whether it changed
// anything; the file is replaced atomically, under the file's lock.
func (a *app) editConfig(fn func(tree map[string]any) (changed bool, err error)) error {
	path := a.loaded.Path
	if path == "" {
		return fmt.Errorf("the gateway runs without a config file")
	}
	return atomicfile.Update(path, 0o600, func(old []byte) ([]byte, error) {
		tree := map[string]any{}
		if len(old) > 0 {
			if err := json.Unmarshal(old, &tree); err != nil {
				return nil, fmt.Errorf("%s does not parse: %w", path, err)
			}
		}
		changed, err := fn(tree)
		if err != nil || !changed {
			return old, err
		}
		out, err := json.MarshalIndent(tree, "", "  ")
		return append(out, '\n'), err
	})
}

// object returns tree[key] as an object, creating it when missing.
func object(tree map[string]any, key string) map[string]any {
	if m, ok := tree[key].(map[string]any); ok {
		return m
	}
	m := map[string]any{}
	tree[key] = m
	return m
}

var listPathRE = regexp.MustCompile(`^agents\.list\[(\d+)\]$`)

// agentObject returns the object of an agent's config path
// ("agents.defaults", "agents.list[1]", "agents.work"), as configs.Agent
// names it.
func agentObject(tree map[string]any, path string) (map[string]any, error) {
	agents := object(tree, "agents")
	if m := listPathRE.FindStringSubmatch(path); m != nil {
		i, _ := strconv.Atoi(m[1])
		list, _ := agents["list"].([]any)
		if i >= len(list) {
			return nil, fmt.Errorf("%s is not in the config file", path)
		}
		obj, ok := list[i].(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%s is not an object", path)
		}
		return obj, nil
	}
	const prefix = "agents."
	if len(path) <= len(prefix) || path[:len(prefix)] != prefix {
		return nil, fmt.Errorf("cannot edit agent at %q", path)
	}
	return object(agents, path[len(prefix):]), nil
}
