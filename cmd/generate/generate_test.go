package main

import (
	"bytes"
	"flag"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite the want/ directories of testdata from the generator's output")

// readTree reads every file under dir, by slash-separated path.
func readTree(t *testing.T, dir string, skip ...string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if rel = filepath.ToSlash(rel); !slices.Contains(skip, rel) {
			out[rel] = b
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// diffFiles compares two sets of files, text-diffing those that differ.
func diffFiles(t *testing.T, want, got map[string][]byte) {
	t.Helper()
	for p := range want {
		if _, ok := got[p]; !ok {
			t.Errorf("%s: wanted, not generated", p)
		}
	}
	for p, g := range got {
		w, ok := want[p]
		if !ok {
			t.Errorf("%s: generated, not wanted", p)
			continue
		}
		if diff := cmp.Diff(string(w), string(g)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", p, diff)
		}
	}
}

func TestGolden(t *testing.T) {
	cases, err := os.ReadDir("testdata")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		if !c.IsDir() {
			continue
		}
		t.Run(c.Name(), func(t *testing.T) {
			dir := filepath.Join("testdata", c.Name())
			got, err := Generate(os.DirFS(filepath.Join(dir, "schema")))
			if err != nil {
				t.Fatal(err)
			}
			wantDir := filepath.Join(dir, "want")
			if *update {
				if err := os.RemoveAll(wantDir); err != nil {
					t.Fatal(err)
				}
				if err := write(wantDir, got); err != nil {
					t.Fatal(err)
				}
			}
			diffFiles(t, readTree(t, wantDir), got)
		})
	}
}

// TestCommitted is the staleness check: what the real schema makes is what
// gen/ and docs/codes.md hold. Run go generate ./... from the root if it fails.
func TestCommitted(t *testing.T) {
	got, err := Generate(os.DirFS("../../schema"))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]byte{}
	for _, d := range genDirs {
		entries, err := os.ReadDir(filepath.Join("../..", d))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if strings.HasSuffix(e.Name(), ".gen.go") {
				b, err := os.ReadFile(filepath.Join("../..", d, e.Name()))
				if err != nil {
					t.Fatal(err)
				}
				want[d+"/"+e.Name()] = b
			}
		}
	}
	for _, f := range []string{"docs/codes.md", "gen/typescript/job.v1.d.ts"} {
		b, err := os.ReadFile("../../" + f)
		if err != nil {
			t.Fatal(err)
		}
		want[f] = b
	}
	diffFiles(t, want, got)
	if t.Failed() {
		t.Log("the generated files are stale: run go generate ./... from the repository root")
	}
}

func TestDeterministic(t *testing.T) {
	a, err := Generate(os.DirFS("../../schema"))
	if err != nil {
		t.Fatal(err)
	}
	for range 5 {
		b, err := Generate(os.DirFS("../../schema"))
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(a, b); diff != "" {
			t.Fatalf("two runs differ:\n%s", diff)
		}
	}
	// Every file names its source under the generated-code line: the files
	// of gen/jobv1 and gen/typescript the job schema, those of gen/codes and
	// docs/codes.md codes.yaml, any other file one of the two.
	for p, b := range a {
		srcs := []string{"job.v1.json", codesName}
		switch {
		case strings.HasPrefix(p, "gen/jobv1/"), strings.HasPrefix(p, "gen/typescript/"):
			srcs = srcs[:1]
		case strings.HasPrefix(p, "gen/codes/"), p == "docs/codes.md":
			srcs = srcs[1:]
		}
		ok := false
		for _, src := range srcs {
			start := "// " + header + "\n// Source: schema/" + src + "\n\n"
			if strings.HasSuffix(p, ".md") {
				start = "<!-- " + header + " -->\n<!-- Source: schema/" + src + " -->\n\n"
				b = bytes.TrimPrefix(b, []byte("# Codes\n\n"))
			}
			ok = ok || bytes.HasPrefix(b, []byte(start))
		}
		if !ok {
			t.Errorf("%s does not begin with the generated-code header naming its source (schema/%s)", p, strings.Join(srcs, " or schema/"))
		}
	}
}

// schemaFS is the real schema with codes.yaml replaced.
func schemaFS(t *testing.T, codes string) fs.FS {
	t.Helper()
	job, err := os.ReadFile("testdata/basic/schema/job.v1.json")
	if err != nil {
		t.Fatal(err)
	}
	return fstest.MapFS{
		"job.v1.json": {Data: job},
		"codes.yaml":  {Data: []byte(codes)},
	}
}

func TestBadCodes(t *testing.T) {
	const ok = "  - {code: a.b, where: log, what: A b., level: info}\n"
	tests := []struct{ name, yaml, want string }{
		{"duplicate code", "codes:\n" + ok + ok, `"a.b"): duplicate code`},
		{"unknown where", "codes:\n  - {code: x, where: elsewhere, what: X., level: info}\n", `unknown where "elsewhere"`},
		{"unknown state", "codes:\n  - {code: x, where: failure, state: lost, what: X., level: info}\n", `unknown state "lost"`},
		{"unknown level", "codes:\n  - {code: x, where: log, what: X., level: loud}\n", `unknown level "loud"`},
		{"failure without state", "codes:\n  - {code: x, where: failure, what: X., level: error}\n", "a failure needs a state"},
		{"same Go name", "codes:\n  - {code: queue.job_started, where: log, what: X., level: info}\n  - {code: queue.job.started, where: log, what: Y., level: info}\n", "the Go name QueueJobStarted is \"queue.job_started\"'s too"},
		{"no Go name", "codes:\n  - {code: 1st.code, where: log, what: X., level: info}\n", "makes no exported Go name"},
		{"unknown field", "codes:\n  - {code: x, where: log, what: X., level: info, colour: red}\n", "field colour not found"},
		{"no codes", "codes: []\n", "no codes"},
		{"no what", "codes:\n  - {code: x, where: log, level: info}\n", "no what"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Generate(schemaFS(t, tt.yaml))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Generate = %v, want an error with %q", err, tt.want)
			}
		})
	}
	if _, err := Generate(schemaFS(t, "codes:\n"+ok)); err != nil {
		t.Errorf("a good codes.yaml: %v", err)
	}
}

func TestBadSchema(t *testing.T) {
	codes := "codes:\n  - {code: a.b, where: log, what: A b., level: info}\n"
	const shell = `{"$id": "https://example.com/job.v1.json", "if": {"required": ["enc"]}, "then": {"$ref": "#/$defs/sealed"}, "else": {"$ref": "#/$defs/clear"},
		"$defs": {"sealed": {"title": "Sealed", "type": "object", "properties": {"v": {"const": 1}, "enc": {"type": "string"}}}, %s}}`
	tests := []struct{ name, clear, want string }{
		{"object without title", `"clear": {"title": "Job", "type": "object", "properties": {"v": {"const": 1}, "o": {"type": "object", "properties": {"a": {}}}}}`, "needs a title"},
		{"two types titled alike", `"clear": {"title": "Sealed", "type": "object", "properties": {"v": {"const": 1}}}`, `two schemas are titled "Sealed"`},
		{"remote $ref", `"clear": {"title": "Job", "type": "object", "properties": {"v": {"const": 1}, "a": {"$ref": "https://example.com/a.json"}}}`, "only local $ref"},
		{"no version", `"clear": {"title": "Job", "type": "object", "properties": {"a": {"type": "string"}}}`, "no property v"},
		{"two fields alike", `"clear": {"title": "Job", "type": "object", "properties": {"v": {"const": 1}, "userId": {}, "user_id": {}}}`, "both make the field UserID"},
		{"title not a Go name", `"clear": {"title": "my job", "type": "object", "properties": {"v": {"const": 1}}}`, "is not a Go type name"},
		{"duplicate key", `"clear": {"title": "Job", "title": "Job"}`, "duplicate key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fsys := fstest.MapFS{
				"job.v1.json": {Data: []byte(strings.Replace(shell, "%s", tt.clear, 1))},
				"codes.yaml":  {Data: []byte(codes)},
			}
			_, err := Generate(fsys)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Generate = %v, want an error with %q", err, tt.want)
			}
		})
	}
}

func TestGoName(t *testing.T) {
	for in, want := range map[string]string{
		"queue.invalid_job": "QueueInvalidJob", "queue.job.started": "QueueJobStarted", "render.failed": "RenderFailed",
		"audit.failed": "AuditFailed", "delivery_unknown": "DeliveryUnknown", "MAILER_AUDIT_FAILED": "MailerAuditFailed",
		"messageId": "MessageID", "html": "HTML", "kid": "KID", "mac": "MAC", "tenantId": "TenantID", "replyTo": "ReplyTo",
		"v": "V", "contentId": "ContentID", "HTMLBody": "HTMLBody", "so-so": "SoSo", "x2Factor": "X2Factor",
	} {
		got, err := goName(in)
		if err != nil || got != want {
			t.Errorf("goName(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}

func TestWrite(t *testing.T) {
	dir := t.TempDir()
	stale := filepath.Join(dir, "gen", "jobv1", "old.gen.go")
	keep := filepath.Join(dir, "gen", "jobv1", "validate_test.go")
	for _, p := range []string{stale, keep} {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("package jobv1\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	files, err := Generate(os.DirFS("testdata/basic/schema"))
	if err != nil {
		t.Fatal(err)
	}
	if err := write(dir, files); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("the stale %s is still there", stale)
	}
	if _, err := os.Stat(keep); err != nil {
		t.Errorf("a hand-written file went: %v", err)
	}
	diffFiles(t, files, readTree(t, dir, "gen/jobv1/validate_test.go"))
}

// TestGoldenCompiles vets the golden packages, so the generated Go of the
// small schema is known to compile, not only to look as wanted.
func TestGoldenCompiles(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go vet")
	}
	cases, err := filepath.Glob("testdata/*/want/gen")
	if err != nil || len(cases) == 0 {
		t.Fatalf("no golden packages: %v", err)
	}
	for _, dir := range cases {
		out, err := exec.Command("go", "vet", "./"+filepath.ToSlash(dir)+"/...").CombinedOutput()
		if err != nil {
			t.Errorf("go vet ./%s/...: %v\n%s", dir, err, out)
		}
	}
}
