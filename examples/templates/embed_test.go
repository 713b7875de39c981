package templates_test

import (
	"io/fs"
	"testing"

	"github.com/alexify/mailer/examples/templates"
	"github.com/google/go-cmp/cmp"
)

func TestFS(t *testing.T) {
	t.Parallel()
	var got []string
	err := fs.WalkDir(templates.FS, ".", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			got = append(got, p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"_partials/footer.html", "_partials/footer.txt",
		"reset-password/de/body.html", "reset-password/de/body.txt", "reset-password/de/subject.txt",
		"reset-password/en/body.html", "reset-password/en/body.txt", "reset-password/en/subject.txt",
		"welcome/en/body.html", "welcome/en/body.txt", "welcome/en/subject.txt",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("files (-want +got):\n%s", diff)
	}
}
