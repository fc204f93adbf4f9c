package tenancy

import (
	"go/ast"
	"go/constant"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// statement is one SQL text found in engram's source.
type statement struct {
	Name string // package.const, or package.Func for a literal
	Pos  string // file:line
	SQL  string
}

// dynamicCall is a driver call whose SQL is not a constant.
type dynamicCall struct {
	Name string // package.Func
	Pos  string
}

// skipDirs are the module's folders whose statements the daemon never
// sends: test plumbing and tools.
var skipDirs = map[string]bool{
	"internal/pgtest": true, "internal/tenancy": true, "scripts": true, "eval": true,
	"internal/depstest": true, "internal/loadgen": true, "internal/openaitest": true,
}

var sqlStart = regexp.MustCompile(`^\s*(SELECT|INSERT|UPDATE|DELETE|WITH|MERGE|CREATE TEMP TABLE)\s+[^/\s]`)

// tempTable is a statement that makes a temporary table the statements
// after it in its transaction read (store's COPY staging): it is run
// before each statement is planned, not checked itself.
var tempTable = regexp.MustCompile(`^\s*CREATE TEMP TABLE\s`)

// driverCalls are the methods of pgx's executors (pg.DBTX, pgx.Batch) that
// take SQL, and the index of the SQL among their arguments.
var driverCalls = map[string]int{"Exec": 1, "Query": 1, "QueryRow": 1, "Queue": 0}

// moduleRoot is the folder of go.mod.
func moduleRoot(t *testing.T) string {
	dir, err := filepath.Abs("../..")
	require.NoError(t, err)
	_, err = os.Stat(filepath.Join(dir, "go.mod"))
	require.NoError(t, err)
	return dir
}

// sourceStatements returns every constant SQL text of the module's
// non-test Go files (the value of every maximal constant string expression
// that starts as a statement does), and every call of a driver method whose
// SQL argument is not a constant. Constants are folded by go/types, so a
// statement built by concatenating constants is read whole.
func sourceStatements(t *testing.T) ([]statement, []dynamicCall) {
	root := moduleRoot(t)
	byDir := map[string][]string{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			if rel != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "node_modules" || skipDirs[rel]) {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(path, ".go") && !strings.HasSuffix(path, "_test.go") {
			byDir[filepath.Dir(rel)] = append(byDir[filepath.Dir(rel)], path)
		}
		return nil
	})
	require.NoError(t, err)

	seen := map[string]bool{}
	var stmts []statement
	var dynamic []dynamicCall
	dirs := make([]string, 0, len(byDir))
	for d := range byDir {
		dirs = append(dirs, d)
	}
	sort.Strings(dirs)
	for _, dir := range dirs {
		fset := token.NewFileSet()
		var files []*ast.File
		for _, path := range byDir[dir] {
			f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
			require.NoError(t, err)
			files = append(files, f)
		}
		// Only the package's own constants matter, so imports are not
		// type-checked: their errors are ignored, and constants built from
		// the package's own literals are folded all the same.
		info := &types.Info{Types: map[ast.Expr]types.TypeAndValue{}, Defs: map[*ast.Ident]types.Object{}}
		conf := types.Config{Importer: noImports{}, Error: func(error) {}}
		_, _ = conf.Check(dir, fset, files, info)
		pkg := files[0].Name.Name

		for _, f := range files {
			var fn string
			pos := func(n ast.Node) string {
				p := fset.Position(n.Pos())
				rel, _ := filepath.Rel(root, p.Filename)
				return rel + ":" + strconv.Itoa(p.Line)
			}
			constString := func(e ast.Expr) (string, bool) {
				tv, ok := info.Types[e]
				if !ok || tv.Value == nil || tv.Value.Kind() != constant.String {
					return "", false
				}
				return constant.StringVal(tv.Value), true
			}
			add := func(name string, n ast.Node, sql string) {
				if !sqlStart.MatchString(sql) || seen[sql] {
					return
				}
				seen[sql] = true
				stmts = append(stmts, statement{Name: name, Pos: pos(n), SQL: sql})
			}
			// Declared constants first, so that a statement is named
			// after its declaration rather than after a use.
			for _, d := range f.Decls {
				g, ok := d.(*ast.GenDecl)
				if !ok || g.Tok != token.CONST {
					continue
				}
				for _, s := range g.Specs {
					vs := s.(*ast.ValueSpec)
					for i, id := range vs.Names {
						if i < len(vs.Values) {
							if sql, ok := constString(vs.Values[i]); ok {
								add(pkg+"."+id.Name, id, sql)
							}
						}
					}
				}
			}
			ast.Inspect(f, func(n ast.Node) bool {
				switch n := n.(type) {
				case *ast.FuncDecl:
					fn = n.Name.Name
					if n.Recv != nil && len(n.Recv.List) == 1 {
						fn = recvName(n.Recv.List[0].Type) + "." + fn
					}
				case *ast.ValueSpec:
					return true
				case *ast.CallExpr:
					sel, ok := n.Fun.(*ast.SelectorExpr)
					if !ok {
						return true
					}
					i, ok := driverCalls[sel.Sel.Name]
					if !ok || len(n.Args) <= i {
						return true
					}
					arg := n.Args[i]
					if sql, ok := constString(arg); ok {
						add(pkg+"."+fn, arg, sql)
						return true
					}
					// A call on a URL's query, or with a context first
					// and no SQL (client methods), is no driver call.
					if _, isLit := arg.(*ast.CompositeLit); isLit {
						return true
					}
					if tv, ok := info.Types[arg]; ok && tv.Type != nil && !isString(tv.Type) {
						return true
					}
					dynamic = append(dynamic, dynamicCall{Name: pkg + "." + fn, Pos: pos(arg)})
				case ast.Expr:
					if sql, ok := constString(n); ok {
						add(pkg+"."+fn, n, sql)
						return false
					}
				}
				return true
			})
		}
	}
	return stmts, dynamic
}

// noImports refuses every import: only a package's own constants are
// folded.
type noImports struct{}

func (noImports) Import(path string) (*types.Package, error) {
	return importer.Default().Import("unsafe")
}

func isString(t types.Type) bool {
	b, ok := t.Underlying().(*types.Basic)
	return ok && b.Info()&types.IsString != 0
}

func recvName(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.StarExpr:
		return recvName(e.X)
	case *ast.Ident:
		return e.Name
	case *ast.IndexExpr:
		return recvName(e.X)
	case *ast.IndexListExpr:
		return recvName(e.X)
	}
	return "?"
}
