package depstest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Calls lists the uses, in the module's Go files under root (tests aside),
// of the functions names of the package importPath, from packages other
// than allowed (by their package clause): the check that holds a door. It
// returns them as "file:line:col: pkg.Name", and how many files it read.
func Calls(root, importPath string, names []string, allowed ...string) (uses []string, files int, err error) {
	fset := token.NewFileSet()
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "node_modules") && path != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		f, err := parser.ParseFile(fset, path, src, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		files++
		uses = append(uses, CallsIn(fset, f, importPath, names, allowed...)...)
		return nil
	})
	return uses, files, err
}

// CallsIn is [Calls] for one parsed file.
func CallsIn(fset *token.FileSet, file *ast.File, importPath string, names []string, allowed ...string) []string {
	if slices.Contains(allowed, file.Name.Name) {
		return nil
	}
	local := ""
	for _, imp := range file.Imports {
		if path, _ := strconv.Unquote(imp.Path.Value); path == importPath {
			local = filepath.Base(importPath)
			if imp.Name != nil {
				local = imp.Name.Name
			}
		}
	}
	if local == "" {
		return nil
	}
	var out []string
	ast.Inspect(file, func(n ast.Node) bool {
		sel, ok := n.(*ast.SelectorExpr)
		if !ok {
			return true
		}
		if id, ok := sel.X.(*ast.Ident); ok && id.Name == local && slices.Contains(names, sel.Sel.Name) {
			out = append(out, fset.Position(sel.Pos()).String()+": "+filepath.Base(importPath)+"."+sel.Sel.Name)
		}
		return true
	})
	return out
}
