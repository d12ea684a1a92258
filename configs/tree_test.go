package configs

import "testing"

func TestTreePaths(t *testing.T) {
	tree := map[string]any{"tools": map[string]any{"exec": map[string]any{"timeout": 60.0}}, "name": "x"}
	if got := GetPath(tree, "tools.exec.timeout"); got != 60.0 {
		t.Errorf("get = %v", got)
	}
	if GetPath(tree, "tools.web.proxy") != nil || GetPath(tree, "name.deeper") != nil {
		t.Error("a missing path was found")
	}
	if err := SetPath(tree, "tools.web.proxy", "http://p"); err != nil || GetPath(tree, "tools.web.proxy") != "http://p" {
		t.Errorf("set: %v %v", err, tree)
	}
	if err := SetPath(tree, "name.deeper", 1); err == nil {
		t.Error("a string was treated as an object")
	}
}
