// gocalls: every call in a Go module and what it calls, as Go's own type checker (go/types, the
// checker gopls answers with) resolves it. The truth of `nav_quality.py precision-go`.
//
//	go run gocalls.go ROOT > calls.jsonl
//
// Each package directory of the module is parsed (the files this machine builds: go/build's
// constraints) and type-checked; the module's own imports are
// checked from source, the standard library through the source importer, and any other import is
// an empty package (its members stay unresolved, and such calls are left out). One JSON line per
// call whose callee is a name (f(x), x.f(y), pkg.f(z)): the call's file and line, the callee's
// name, and its definition's file and line, or "builtin".
package main

import (
	"encoding/json"
	"fmt"
	"go/ast"
	"go/build"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

type call struct {
	File   string `json:"file"`
	Line   int    `json:"line"`
	Name   string `json:"name"`
	Def    string `json:"def"` // "path:line" of the callee's name, or "builtin"
	Method bool   `json:"method"`
}

type loader struct {
	root, module string
	fset         *token.FileSet
	std          types.Importer
	done         map[string]*types.Package
	files        map[string][]*ast.File
	infos        map[string]*types.Info
}

func (l *loader) Import(path string) (*types.Package, error) {
	if p, ok := l.done[path]; ok {
		return p, nil
	}
	if path == l.module || strings.HasPrefix(path, l.module+"/") {
		dir := filepath.Join(l.root, strings.TrimPrefix(strings.TrimPrefix(path, l.module), "/"))
		return l.check(dir, path), nil
	}
	if !strings.Contains(strings.Split(path, "/")[0], ".") { // the standard library
		if p, err := l.std.Import(path); err == nil {
			l.done[path] = p
			return p, nil
		}
	}
	name := path[strings.LastIndex(path, "/")+1:]
	p := types.NewPackage(path, name)
	p.MarkComplete()
	l.done[path] = p
	return p, nil
}

func (l *loader) check(dir, path string) *types.Package {
	if p, ok := l.done[path]; ok {
		return p
	}
	// the files this machine builds, as gopls reads them: build constraints and _GOOS/_GOARCH names
	pkgs, err := parser.ParseDir(l.fset, dir, func(fi os.FileInfo) bool {
		if strings.HasSuffix(fi.Name(), "_test.go") {
			return false
		}
		ok, err := build.Default.MatchFile(dir, fi.Name())
		return err == nil && ok
	}, 0)
	var files []*ast.File
	if err == nil {
		for _, p := range pkgs {
			if strings.HasSuffix(p.Name, "_test") || (len(pkgs) > 1 && p.Name == "main") {
				continue
			}
			for _, f := range p.Files {
				files = append(files, f)
			}
		}
	}
	sort.Slice(files, func(i, j int) bool { return l.fset.Position(files[i].Pos()).Filename < l.fset.Position(files[j].Pos()).Filename })
	info := &types.Info{Uses: map[*ast.Ident]types.Object{}}
	conf := types.Config{Importer: l, Error: func(error) {}, FakeImportC: true}
	pkg, _ := conf.Check(path, l.fset, files, info)
	if pkg == nil {
		pkg = types.NewPackage(path, filepath.Base(dir))
	}
	l.done[path] = pkg
	l.files[path] = files
	l.infos[path] = info
	return pkg
}

func main() {
	root, _ := filepath.Abs(os.Args[1])
	mod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "no go.mod:", err)
		os.Exit(2)
	}
	module := ""
	for _, line := range strings.Split(string(mod), "\n") {
		if strings.HasPrefix(line, "module ") {
			module = strings.TrimSpace(strings.TrimPrefix(line, "module "))
		}
	}
	fset := token.NewFileSet()
	l := &loader{root: root, module: module, fset: fset, std: importer.ForCompiler(fset, "source", nil),
		done: map[string]*types.Package{}, files: map[string][]*ast.File{}, infos: map[string]*types.Info{}}
	filepath.Walk(root, func(p string, fi os.FileInfo, err error) error {
		if err != nil || !fi.IsDir() {
			return nil
		}
		base := fi.Name()
		if p != root && (strings.HasPrefix(base, ".") || base == "vendor" || base == "testdata") {
			return filepath.SkipDir
		}
		rel, _ := filepath.Rel(root, p)
		path := module
		if rel != "." {
			path = module + "/" + filepath.ToSlash(rel)
		}
		l.check(p, path)
		return nil
	})
	out := json.NewEncoder(os.Stdout)
	for path, files := range l.files {
		info := l.infos[path]
		for _, f := range files {
			ast.Inspect(f, func(n ast.Node) bool {
				c, ok := n.(*ast.CallExpr)
				if !ok {
					return true
				}
				var id *ast.Ident
				method := false
				switch fn := c.Fun.(type) {
				case *ast.Ident:
					id = fn
				case *ast.SelectorExpr:
					id = fn.Sel
					method = true
				case *ast.IndexExpr: // f[T](x)
					if x, ok := fn.X.(*ast.Ident); ok {
						id = x
					}
				}
				if id == nil {
					return true
				}
				obj := info.Uses[id]
				if obj == nil {
					return true
				}
				pos := fset.Position(c.Lparen)
				rel, _ := filepath.Rel(root, pos.Filename)
				row := call{File: filepath.ToSlash(rel), Line: fset.Position(id.Pos()).Line, Name: id.Name, Method: method}
				switch o := obj.(type) {
				case *types.Builtin:
					row.Def = "builtin"
				case *types.Func:
					d := fset.Position(o.Pos())
					if d.Filename == "" || !strings.HasPrefix(d.Filename, root+string(os.PathSeparator)) {
						row.Def = "external"
					} else {
						drel, _ := filepath.Rel(root, d.Filename)
						row.Def = fmt.Sprintf("%s:%d", filepath.ToSlash(drel), d.Line)
					}
				default:
					return true // a conversion, a func-typed variable or field: no definition to name
				}
				out.Encode(row)
				return true
			})
		}
	}
}
