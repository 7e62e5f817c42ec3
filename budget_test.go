package kvnode_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The size budget of issue 17: no package (but oql, one language's lexer,
// parser, planner and evaluator) over maxPackageLines lines of non-test Go,
// no type with more than maxMethods methods (rest.Server's handlers
// excepted), *store.Store with at most maxStoreMethods, and cmd/kvnode a
// thin program. A package that grows past them has taken on a second
// concern; split it rather than raise the number.
const (
	maxPackageLines = 2500
	maxMethods      = 30
	maxStoreMethods = 25
	maxCmdLines     = 600
)

// sourceFiles lists a package directory's non-test Go files, whatever
// their build tags (chaos and docker code is code the project keeps too).
func sourceFiles(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, e := range ents {
		n := e.Name()
		if e.IsDir() || !strings.HasSuffix(n, ".go") || strings.HasSuffix(n, "_test.go") {
			continue
		}
		files = append(files, filepath.Join(dir, n))
	}
	return files
}

// packageDirs walks the main module's tree (deploy/k8stest is its own
// module, testdata holds no packages of ours).
func packageDirs(t *testing.T) []string {
	t.Helper()
	var dirs []string
	err := filepath.WalkDir(".", func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		switch d.Name() {
		case ".git", "testdata", "node_modules", "bin", "chaos-results":
			return filepath.SkipDir
		}
		if p != "." {
			if _, err := os.Stat(filepath.Join(p, "go.mod")); err == nil {
				return filepath.SkipDir
			}
		}
		dirs = append(dirs, p)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return dirs
}

func countLines(t *testing.T, file string) int {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(b), "\n")
}

// receiverName is the base type name of a method's receiver.
func receiverName(e ast.Expr) string {
	for {
		switch x := e.(type) {
		case *ast.StarExpr:
			e = x.X
		case *ast.IndexExpr:
			e = x.X
		case *ast.IndexListExpr:
			e = x.X
		case *ast.ParenExpr:
			e = x.X
		case *ast.Ident:
			return x.Name
		default:
			return ""
		}
	}
}

func TestSizeBudgets(t *testing.T) {
	dirs := packageDirs(t)
	if len(dirs) < 10 {
		t.Fatalf("found only %d package directories: %v", len(dirs), dirs)
	}
	for _, dir := range dirs {
		files := sourceFiles(t, dir)
		if len(files) == 0 {
			continue
		}
		rel := filepath.ToSlash(dir)
		lines := 0
		methods := map[string]int{}
		fset := token.NewFileSet()
		for _, f := range files {
			lines += countLines(t, f)
			af, err := parser.ParseFile(fset, f, nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatalf("parse %s: %v", f, err)
			}
			for _, d := range af.Decls {
				if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv != nil && len(fd.Recv.List) == 1 {
					methods[receiverName(fd.Recv.List[0].Type)]++
				}
			}
		}
		switch {
		case rel == "oql":
			// The allowed exception: one language, one package.
		case rel == "cmd/kvnode":
			if lines >= maxCmdLines {
				t.Errorf("cmd/kvnode has %d lines of non-test code; it keeps only flag parsing and wiring (< %d)", lines, maxCmdLines)
			}
		case lines > maxPackageLines:
			t.Errorf("package %s has %d lines of non-test code (budget %d): split it by concern", rel, lines, maxPackageLines)
		}
		for typ, n := range methods {
			limit := maxMethods
			switch {
			case rel == "rest" && typ == "Server":
				continue // the handlers, one per endpoint
			case rel == "store" && typ == "Store":
				limit = maxStoreMethods
			}
			if n > limit {
				t.Errorf("%s.%s has %d methods (budget %d)", rel, typ, n, limit)
			}
		}
	}
}
