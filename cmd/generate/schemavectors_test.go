package main

import (
	"os"
	"slices"
	"testing"
)

// TestSchemaVectorsCoverEveryKeyword: every constraint keyword the schema
// uses is the rule of at least one derived invalid vector, so a new rule
// brings its vectors.
func TestSchemaVectorsCoverEveryKeyword(t *testing.T) {
	raw, err := os.ReadFile("../../schema/job.v1.json")
	if err != nil {
		t.Fatal(err)
	}
	m, err := readJobSchema("job.v1.json", raw)
	if err != nil {
		t.Fatal(err)
	}
	valid, invalid, err := schemaVectors(m)
	if err != nil {
		t.Fatal(err)
	}
	if len(valid) == 0 {
		t.Error("no valid vectors derived")
	}
	derived := map[string]bool{}
	for _, v := range invalid {
		for _, e := range v.Errors {
			derived[e.Rule] = true
		}
	}
	constraints := []string{"type", "enum", "const", "minLength", "maxLength", "pattern", "format", "contentEncoding",
		"minimum", "maximum", "minItems", "maxItems", "minProperties", "maxProperties", "required", "additionalProperties", "propertyNames"}
	used := map[string]bool{}
	var walk func(n *node)
	walk = func(n *node) {
		switch n.kind {
		case 'o':
			for _, k := range n.keys {
				if slices.Contains(constraints, k) {
					used[k] = true
				}
				if k != "enum" && k != "const" && k != "x-enum-doc" {
					walk(n.vals[k])
				}
			}
		case 'a':
			for _, it := range n.items {
				walk(it)
			}
		}
	}
	walk(m.root.get("$defs"))
	for _, k := range constraints {
		if used[k] && !derived[k] {
			t.Errorf("the schema uses %s, and no derived vector fails it", k)
		}
	}
}
