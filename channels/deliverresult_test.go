package channels

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// TestDeliverRetryingResultIsUsed holds DeliverRetrying's contract in the
// tree: its result decides whether the platform is acknowledged, so no
// adapter may drop it, as a statement of its own or into the blank
// identifier. (go vet does not check unused results of non-builtin
// functions; this test does it for this one.)
func TestDeliverRetryingResultIsUsed(t *testing.T) {
	fset := token.NewFileSet()
	var dropped []string
	calls := 0
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) && path != "." {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		isCall := func(e ast.Expr) bool {
			call, ok := e.(*ast.CallExpr)
			if !ok {
				return false
			}
			switch fn := call.Fun.(type) {
			case *ast.SelectorExpr:
				return fn.Sel.Name == "DeliverRetrying"
			case *ast.Ident:
				return fn.Name == "DeliverRetrying"
			}
			return false
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch s := n.(type) {
			case *ast.CallExpr:
				if isCall(s) {
					calls++
				}
			case *ast.ExprStmt:
				if isCall(s.X) {
					dropped = append(dropped, fset.Position(s.Pos()).String())
				}
			case *ast.GoStmt:
				if isCall(s.Call) {
					dropped = append(dropped, fset.Position(s.Pos()).String())
				}
			case *ast.DeferStmt:
				if isCall(s.Call) {
					dropped = append(dropped, fset.Position(s.Pos()).String())
				}
			case *ast.AssignStmt:
				for i, rhs := range s.Rhs {
					if isCall(rhs) && i < len(s.Lhs) {
						if id, ok := s.Lhs[i].(*ast.Ident); ok && id.Name == "_" {
							dropped = append(dropped, fset.Position(s.Pos()).String())
						}
					}
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if calls < 10 {
		t.Fatalf("found %d calls of DeliverRetrying under channels/, want the adapters' (did the walk miss them?)", calls)
	}
	for _, pos := range dropped {
		t.Errorf("%s: the result of DeliverRetrying is dropped; branch on it (nil: acknowledge; ErrDenied: acknowledge; else: do not)", pos)
	}
}
