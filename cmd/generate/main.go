// Command generate writes the Go code and the docs that schema/ is the
// source of truth for: gen/jobv1 (the job types, Validate, Decode) from
// schema/job.v1.json, gen/codes and docs/codes.md from schema/codes.yaml.
//
// Run it from the repository root, by hand or through go generate ./...
// (whose directive is in generate.go):
//
//	go run ./cmd/generate [-schema schema] [-out .]
//
// Its output depends only on its input: no time, no path, no map order.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// genDirs are the directories the generator owns: a *.gen.go file in them
// that it no longer writes is removed.
var genDirs = []string{"gen/jobv1", "gen/codes"}

// codesName is the file of the schema directory gen/codes and docs/codes.md
// are generated from.
const codesName = "codes.yaml"

func main() {
	schemaDir := flag.String("schema", "schema", "the directory of job.v1.json and codes.yaml")
	outDir := flag.String("out", ".", "the directory gen/ and docs/ are written under")
	flag.Parse()
	if flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "generate: no arguments expected; see -h")
		os.Exit(2)
	}
	files, err := Generate(os.DirFS(*schemaDir))
	if err != nil {
		fmt.Fprintln(os.Stderr, "generate:", err)
		os.Exit(1)
	}
	if files[vectorsPath], err = Vectors(os.DirFS(*schemaDir)); err != nil {
		fmt.Fprintln(os.Stderr, "generate:", err)
		os.Exit(1)
	}
	if files[codeCheckPath], err = CodeCheck(os.DirFS(*schemaDir)); err != nil {
		fmt.Fprintln(os.Stderr, "generate:", err)
		os.Exit(1)
	}
	if err := write(*outDir, files); err != nil {
		fmt.Fprintln(os.Stderr, "generate:", err)
		os.Exit(1)
	}
}

// Generate reads job.v1.json and codes.yaml from schema and returns the files
// to write, by slash-separated path relative to the output directory.
func Generate(schema fs.FS) (map[string][]byte, error) {
	const jobFile = "job.v1.json"
	raw, err := fs.ReadFile(schema, jobFile)
	if err != nil {
		return nil, err
	}
	m, err := readJobSchema(jobFile, raw)
	if err != nil {
		return nil, err
	}
	out, err := genJob(m, "gen/"+m.pkg)
	if err != nil {
		return nil, err
	}
	if "gen/"+m.pkg != genDirs[0] {
		return nil, fmt.Errorf("%s makes package %s; the generator owns gen/jobv1 only", jobFile, m.pkg)
	}

	data, err := fs.ReadFile(schema, codesName)
	if err != nil {
		return nil, err
	}
	codes, err := readCodes(data)
	if err != nil {
		return nil, err
	}
	b, err := genCodes(codes)
	if err != nil {
		return nil, fmt.Errorf("rendering gen/codes: %w", err)
	}
	ts := m.tsFile()
	out["gen/typescript/"+strings.TrimSuffix(jobFile, ".json")+".d.ts"] = ts
	out["gen/codes/codes.gen.go"] = b
	out["docs/codes.md"] = codesMarkdown(codes)
	return out, nil
}

// write writes files under dir, leaving a file alone when it holds the bytes
// already, and removes the stale *.gen.go files of genDirs.
func write(dir string, files map[string][]byte) error {
	paths := make([]string, 0, len(files))
	for p := range files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if old, err := os.ReadFile(full); err == nil && bytes.Equal(old, files[p]) {
			continue
		}
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(full, files[p], 0o644); err != nil {
			return err
		}
	}
	for _, d := range genDirs {
		entries, err := os.ReadDir(filepath.Join(dir, filepath.FromSlash(d)))
		if err != nil {
			if os.IsNotExist(err) {
				continue
			}
			return err
		}
		for _, e := range entries {
			if e.IsDir() || !strings.HasSuffix(e.Name(), ".gen.go") {
				continue
			}
			if _, ok := files[d+"/"+e.Name()]; !ok {
				if err := os.Remove(filepath.Join(dir, filepath.FromSlash(d), e.Name())); err != nil {
					return err
				}
			}
		}
	}
	return nil
}
