package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRun runs the quickstart into a temporary folder: it writes one .eml
// file, the German reset-password message.
func TestRun(t *testing.T) {
	out := t.TempDir()
	if err := run(context.Background(), out); err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join(out, "*.eml"))
	if err != nil || len(files) != 1 {
		t.Fatalf("the .eml files written: %v, %v; want one", files, err)
	}
	data, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	// The subject is "Passwort zurücksetzen", Q-encoded (RFC 2047).
	if !strings.Contains(string(data), "Subject: =?UTF-8?q?Passwort_zur=C3=BCcksetzen?=") {
		t.Errorf("the message is not the German reset-password one:\n%.600s", data)
	}
}
