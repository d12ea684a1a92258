package configs

import (
	"fmt"
	"strings"
)

// The config file's own JSON tree is what the workbench and the CLI edit
// (not a re-encoded Config), so ${VAR} references and keys this build does
// not know stay as written. These read and write it by dotted path
// ("tools.exec.approval").

// GetPath returns the value at path in tree, nil when any part is missing.
func GetPath(tree map[string]any, path string) any {
	var cur any = tree
	for _, k := range strings.Split(path, ".") {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = m[k]
	}
	return cur
}

// SetPath sets path in tree to v, creating the objects on the way; it
// fails when a part of the path holds something other than an object.
func SetPath(tree map[string]any, path string, v any) error {
	segs := strings.Split(path, ".")
	cur := tree
	for i, k := range segs[:len(segs)-1] {
		next, ok := cur[k]
		if !ok || next == nil {
			m := map[string]any{}
			cur[k] = m
			cur = m
			continue
		}
		m, ok := next.(map[string]any)
		if !ok {
			return fmt.Errorf("%s is not an object in the file", strings.Join(segs[:i+1], "."))
		}
		cur = m
	}
	cur[segs[len(segs)-1]] = v
	return nil
}

// deletePath removes path from tree, if it is there.
func deletePath(tree map[string]any, path string) {
	segs := strings.Split(path, ".")
	cur := tree
	for _, k := range segs[:len(segs)-1] {
		next, ok := cur[k].(map[string]any)
		if !ok {
			return
		}
		cur = next
	}
	delete(cur, segs[len(segs)-1])
}
