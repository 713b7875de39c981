package attachments_test

import (
	"context"
	"errors"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/alexify/mailer/attachments"
	"github.com/alexify/mailer/mailqueue"
)

var info = mailqueue.ResolveInfo{}

func TestFromPath(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	root := filepath.Join(dir, "root")
	mustWrite(t, filepath.Join(root, "terms.txt"), "the terms")
	mustWrite(t, filepath.Join(root, "invoices", "1.pdf"), "%PDF-1.4")
	mustWrite(t, filepath.Join(root, "big.bin"), strings.Repeat("x", 2048))
	mustWrite(t, filepath.Join(dir, "secret.txt"), "outside")
	if err := os.Symlink(filepath.Join(dir, "secret.txt"), filepath.Join(root, "link-out.txt")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(dir, filepath.Join(root, "dir-out")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("terms.txt", filepath.Join(root, "link-in.txt")); err != nil {
		t.Fatal(err)
	}
	resolve := attachments.FromPath(root, attachments.WithMaxBytes(1024))
	ctx := context.Background()

	for ref, want := range map[string]string{"terms.txt": "the terms", "invoices/1.pdf": "%PDF-1.4", "link-in.txt": "the terms"} {
		got, err := resolve(ctx, ref, info)
		if err != nil || string(got) != want {
			t.Errorf("%s: %q, %v; want %q", ref, got, err, want)
		}
	}
	for _, ref := range []string{
		"../secret.txt", "invoices/../../secret.txt", "/etc/passwd", filepath.Join(dir, "secret.txt"),
		"link-out.txt", "dir-out/secret.txt", "big.bin", "invoices", "", "a\\..\\secret.txt", "./terms.txt",
	} {
		got, err := resolve(ctx, ref, info)
		if !errors.Is(err, attachments.ErrRefused) || got != nil {
			t.Errorf("%q: %q, %v; want ErrRefused", ref, got, err)
		}
	}
	if _, err := resolve(ctx, "missing.txt", info); !errors.Is(err, fs.ErrNotExist) || errors.Is(err, attachments.ErrRefused) {
		t.Errorf("a missing file: %v; want fs.ErrNotExist", err)
	}
	if _, err := attachments.FromPath(filepath.Join(dir, "nope"))(ctx, "terms.txt", info); err == nil {
		t.Error("a missing root: no error")
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := resolve(cctx, "terms.txt", info); !errors.Is(err, context.Canceled) {
		t.Errorf("a cancelled context: %v", err)
	}
}

func mustWrite(t *testing.T, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o640); err != nil {
		t.Fatal(err)
	}
}

func TestFromURL(t *testing.T) {
	t.Parallel()
	other := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte("from another host"))
	}))
	defer other.Close()
	// "localhost" and "127.0.0.1" are two hosts of one server: one allowed,
	// the other not.
	var srv *httptest.Server
	srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/terms.pdf":
			_, _ = w.Write([]byte("%PDF-1.4 terms"))
		case "/big":
			_, _ = w.Write([]byte(strings.Repeat("x", 2048)))
		case "/big-chunked":
			w.(http.Flusher).Flush() // no Content-Length
			_, _ = w.Write([]byte(strings.Repeat("x", 2048)))
		case "/slow":
			select {
			case <-r.Context().Done():
			case <-time.After(5 * time.Second):
			}
		case "/redirect-in":
			http.Redirect(w, r, "/terms.pdf", http.StatusFound)
		case "/redirect-out":
			http.Redirect(w, r, other.URL+"/x", http.StatusFound)
		case "/redirect-host":
			u, _ := url.Parse(srv.URL)
			http.Redirect(w, r, "https://localhost:"+u.Port()+"/terms.pdf", http.StatusFound)
		case "/redirect-http":
			http.Redirect(w, r, strings.Replace(srv.URL, "https", "http", 1)+"/terms.pdf", http.StatusFound)
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	u, _ := url.Parse(srv.URL)
	allow := []string{u.Host} // 127.0.0.1:port: not other's port
	resolve := attachments.FromURL(allow, attachments.WithHTTPClient(srv.Client()),
		attachments.WithMaxBytes(1024), attachments.WithTimeout(200*time.Millisecond))
	ctx := context.Background()

	for _, ref := range []string{srv.URL + "/terms.pdf", srv.URL + "/redirect-in"} {
		got, err := resolve(ctx, ref, info)
		if err != nil || string(got) != "%PDF-1.4 terms" {
			t.Errorf("%s: %q, %v", ref, got, err)
		}
	}
	for _, ref := range []string{
		other.URL + "/x",                                        // another port: not allowed
		srv.URL + "/redirect-out",                               // a redirect off the list
		srv.URL + "/redirect-host",                              // a redirect to another host name
		srv.URL + "/redirect-http",                              // a redirect to http
		strings.Replace(srv.URL, "https", "http", 1) + "/terms", // http without AllowHTTP
		"https://user:pw@" + u.Host + "/terms.pdf",
		"file:///etc/passwd",
		srv.URL + "/big",
		srv.URL + "/big-chunked",
		"::not a url",
	} {
		got, err := resolve(ctx, ref, info)
		if !errors.Is(err, attachments.ErrRefused) || got != nil {
			t.Errorf("%s: %q, %v; want ErrRefused", ref, got, err)
		}
	}
	if _, err := resolve(ctx, srv.URL+"/missing", info); err == nil || errors.Is(err, attachments.ErrRefused) {
		t.Errorf("a 404: %v; want an error that is not a refusal", err)
	}
	start := time.Now()
	if _, err := resolve(ctx, srv.URL+"/slow", info); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a slow server: %v; want a timeout", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("the timeout took %v", d)
	}
	// A host name entry matches on any port.
	byName := attachments.FromURL([]string{"127.0.0.1"}, attachments.WithHTTPClient(srv.Client()))
	if got, err := byName(ctx, other.URL+"/x", info); err != nil || string(got) != "from another host" {
		t.Errorf("a host entry on another port: %q, %v", got, err)
	}
	// An error does not quote the URL, which may hold a token.
	if _, err := resolve(ctx, srv.URL+"/missing?token=s3cr3t", info); err == nil || strings.Contains(err.Error(), "s3cr3t") {
		t.Errorf("the error quotes the URL: %v", err)
	}
}

func TestFromPathRefusesAFIFO(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o600); err != nil {
		t.Skipf("SKIPPED: no FIFO here: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := attachments.FromPath(dir)(ctx, "fifo", mailqueue.ResolveInfo{})
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, attachments.ErrRefused) {
			t.Errorf("a FIFO: %v, want ErrRefused", err)
		}
	case <-time.After(3 * time.Second):
		t.Fatal("FromPath blocked on a FIFO")
	}
}
