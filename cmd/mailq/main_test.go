package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

func TestDemo(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run(context.Background(), []string{"demo"}, nil, &out, &errOut); code != 0 {
		t.Fatalf("mailq demo exited %d\nstdout:\n%s\nstderr:\n%s", code, out.String(), errOut.String())
	}
	s := out.String()
	for _, want := range []string{
		"duplicate=true, same id=true",
		"envelope: MAIL FROM:<no-reply@example.com> RCPT TO:<ada@example.com>",
		"Subject: Reset your password",
		"| https://app.example.com/reset?token=demo-token",
		"parts: text/plain, text/html, image/png, application/pdf",
		"attachment: logo.png (image/png, inline, ",
		"attachment: terms.pdf (application/pdf, attachment, 606 bytes)",
		"enqueued template job reset-password (de) ",
		"envelope: MAIL FROM:<no-reply@example.com> RCPT TO:<juergen@example.com>",
		"Subject: Passwort zurücksetzen   (encoded, RFC 2047)",
		"To: Jürgen Groß <juergen@example.com>   (encoded, RFC 2047)",
		"| Hallo Jürgen,",
		"| https://app.example.com/reset?token=demo-token-de",
		"3 jobs enqueued, 3 accepted, 0 failed, 0 delivery unknown; 3 messages arrived",
		"attachments.FromPath(",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("the demo's output lacks %q:\n%s", want, s)
		}
	}

	// Away from the repository, the demo reads a temporary copy of the
	// embedded examples/attachments.
	t.Run("outside the repository", func(t *testing.T) {
		t.Chdir(t.TempDir())
		var out, errOut bytes.Buffer
		if code := run(context.Background(), []string{"demo"}, nil, &out, &errOut); code != 0 {
			t.Fatalf("mailq demo exited %d\nstdout:\n%s\nstderr:\n%s", code, out.String(), errOut.String())
		}
		for _, want := range []string{"attachment: terms.pdf (application/pdf, attachment, 606 bytes)", "3 messages arrived", "mailq-demo-attachments-"} {
			if !strings.Contains(out.String(), want) {
				t.Errorf("the demo's output lacks %q:\n%s", want, out.String())
			}
		}
	})
}

func TestValidate(t *testing.T) {
	tests := []struct {
		file     string
		wantCode int
		want     []string
	}{
		{"../../examples/jobs/reset-password.json", 0, []string{"valid"}},
		{"../../examples/jobs/invalid.json", 1, []string{
			"invalid (queue.invalid_job), 4 error(s)",
			"  headers.Message-ID: ",
			"  priority: ",
			"  template: ",
			"  to[1]: ",
		}},
		{"no-such-file.json", 1, nil},
	}
	for _, tc := range tests {
		var out, errOut bytes.Buffer
		code := run(context.Background(), []string{"validate", tc.file}, nil, &out, &errOut)
		if code != tc.wantCode {
			t.Errorf("validate %s: exit %d, want %d\n%s%s", tc.file, code, tc.wantCode, out.String(), errOut.String())
		}
		for _, w := range tc.want {
			if !strings.Contains(out.String(), w) {
				t.Errorf("validate %s: output lacks %q:\n%s", tc.file, w, out.String())
			}
		}
		if strings.Contains(out.String(), "not an address") {
			t.Errorf("validate quotes the bad value:\n%s", out.String())
		}
	}
	var out bytes.Buffer
	if code := run(context.Background(), []string{"validate", "-"}, strings.NewReader(`{"v":1}`), &out, &out); code != 1 {
		t.Errorf("validate - of a bad job: exit %d", code)
	}
	// A job over the default 256 KiB is told so, as Enqueue would refuse it.
	big := `{"v":1,"kind":"content","subject":"s","content":{"text":"` + strings.Repeat("x", 300<<10) + `"},"from":"a@example.com","to":["b@example.com"]}`
	out.Reset()
	if code := run(context.Background(), []string{"validate", "-"}, strings.NewReader(big), &out, &out); code != 1 || !strings.Contains(out.String(), "[maxJobBytes]") {
		t.Errorf("validate of a 300 KiB job: exit %d\n%s", code, out.String())
	}
}
