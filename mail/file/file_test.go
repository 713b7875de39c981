package file_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/alexify/mailer/mail"
	"github.com/alexify/mailer/mail/file"
)

func TestSend(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "outbox")
	tr, err := file.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	m := &mail.Message{
		MessageID: "<a/b..c=d@example.com>", Date: time.Unix(0, 0),
		From: "a@example.com", To: []string{"b@example.com"}, Text: "hi",
	}
	r, err := tr.Send(context.Background(), m)
	if err != nil {
		t.Fatal(err)
	}
	if r.Category != mail.Accepted || r.ProviderID != "a_b..c_d@example.com.eml" {
		t.Errorf("receipt %+v", r)
	}
	got, err := os.ReadFile(filepath.Join(dir, r.ProviderID))
	if err != nil {
		t.Fatal(err)
	}
	want, _ := m.Bytes()
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("file (-want +got):\n%s", diff)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("%d files in the folder, want 1 (no temporary left)", len(entries))
	}

	m.MessageID = ""
	r, err = tr.Send(context.Background(), m)
	if r.Category != mail.Validation || !errors.Is(err, mail.ErrInvalidMessage) {
		t.Errorf("invalid: %+v %v", r, err)
	}
}

func TestName(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"<abc@x.y>":       "abc@x.y.eml",
		"<../../etc@x>":   "_.._etc@x.eml",
		"<a b\x00c@x>":    "a_b_c@x.eml",
		"<..hidden@host>": "hidden@host.eml",
	} {
		if got := file.Name(in); got != want {
			t.Errorf("Name(%q) = %q, want %q", in, got, want)
		}
	}
}
