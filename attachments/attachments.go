// Package attachments reads the attachments a job gives by reference
// ({ref}), for the worker's ResolveAttachment: FromPath reads files below a
// folder, FromURL fetches from an allow-list of hosts (spec: "What a job
// holds").
//
// A job names no file or URL the worker reads blindly: whoever can write to
// the store could write the job. So each resolver confines its references:
// FromPath to one folder (no "..", no absolute path, no symbolic link out of
// it), FromURL to the hosts it is given (redirects included), both to a size
// cap.
//
// The worker retries a job whose resolver fails (queue.attachment_failed):
// an outage passes, and a file that is not there yet may come. A reference
// a resolver refuses for good (a path out of the folder, a host not
// allowed, over the size cap) wraps ErrRefused, which says it is not
// retryable: the worker fails that job at once.
//
// The errors of FromPath quote the reference, which may name the
// recipient or the message: the worker logs an error's text and the ref at
// debug only (queue.job.detail), and the reason it stores says which
// attachment failed and whether it was not found, refused for good or
// timed out.
package attachments

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/alexify/mailer/mailqueue"
)

// The defaults of the resolvers.
const (
	// DefaultMaxBytes is the most bytes one attachment may hold when no
	// WithMaxBytes option is given: 10 MiB.
	DefaultMaxBytes = 10 << 20
	// DefaultTimeout bounds one fetch of FromURL, connecting, redirects and
	// reading the body included, when no WithTimeout option is given: 30
	// seconds.
	DefaultTimeout = 30 * time.Second
	// maxRedirects is the most redirects FromURL follows.
	maxRedirects = 5
)

// ErrRefused is wrapped by the error of a reference a resolver refuses: a
// path out of its folder, a URL whose scheme or host is not allowed (or
// that redirects to one), an attachment over the size cap. Such a refusal
// is the same on every attempt: it says so (Retryable false), and the
// worker fails the job at once (queue.attachment_failed) instead of
// retrying it.
var ErrRefused error = refusedError{}

type refusedError struct{}

func (refusedError) Error() string { return "attachments: reference refused" }

// Retryable reports false: a refused reference stays refused.
func (refusedError) Retryable() bool { return false }

// Resolver is the type of WorkerConfig.ResolveAttachment.
type Resolver = func(ctx context.Context, ref string, info mailqueue.ResolveInfo) ([]byte, error)

// Option configures a resolver.
type Option func(*options)

type options struct {
	maxBytes  int64
	timeout   time.Duration
	client    *http.Client
	allowHTTP bool
}

func newOptions(opts []Option) options {
	o := options{maxBytes: DefaultMaxBytes, timeout: DefaultTimeout}
	for _, f := range opts {
		f(&o)
	}
	return o
}

// WithMaxBytes caps the size of one attachment at n bytes (DefaultMaxBytes,
// 10 MiB, by default); a larger one is refused with ErrRefused. n <= 0
// keeps the default.
func WithMaxBytes(n int64) Option {
	return func(o *options) {
		if n > 0 {
			o.maxBytes = n
		}
	}
}

// WithTimeout bounds one fetch of FromURL (DefaultTimeout, 30 seconds, by
// default), within the worker's context. d <= 0 keeps the default.
func WithTimeout(d time.Duration) Option {
	return func(o *options) {
		if d > 0 {
			o.timeout = d
		}
	}
}

// WithHTTPClient makes FromURL fetch with a copy of c (its transport, such as
// one trusting a private CA); its CheckRedirect is replaced by the
// allow-list's. http.DefaultClient's settings by default.
func WithHTTPClient(c *http.Client) Option {
	return func(o *options) { o.client = c }
}

// AllowHTTP lets FromURL fetch http:// URLs besides https:// ones: for a
// service on a private network or a test server.
func AllowHTTP() Option {
	return func(o *options) { o.allowHTTP = true }
}

// FromPath returns a resolver that reads the reference as a slash-separated
// path below root, such as "invoices/2026/0042.pdf". It refuses, with
// ErrRefused, a path that is absolute, holds "..", a backslash or a NUL, or
// leaves root through a symbolic link (it opens files with os.Root), and a
// file over the size cap (WithMaxBytes). A missing file wraps
// fs.ErrNotExist. root is opened on each call, so it may be created later;
// its absence is an error of each call.
func FromPath(root string, opts ...Option) Resolver {
	o := newOptions(opts)
	return func(ctx context.Context, ref string, _ mailqueue.ResolveInfo) ([]byte, error) {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		name, err := localPath(ref)
		if err != nil {
			return nil, err
		}
		r, err := os.OpenRoot(root)
		if err != nil {
			return nil, fmt.Errorf("attachments: opening the folder: %w", err)
		}
		defer func() { _ = r.Close() }() // read only: nothing is lost
		// Stat before opening: opening a FIFO or a device blocks, and no
		// context could stop it.
		if st, err := r.Stat(name); err == nil && !st.Mode().IsRegular() {
			return nil, fmt.Errorf("%w: %q is not a regular file", ErrRefused, ref)
		}
		f, err := r.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
		if err != nil {
			var pe *fs.PathError
			if errors.As(err, &pe) && !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, fs.ErrPermission) {
				// os.Root refuses a path escaping the root (a symbolic
				// link out of it) with an error of its own.
				return nil, fmt.Errorf("%w: %q leaves the folder or cannot be opened: %w", ErrRefused, ref, pe.Err)
			}
			return nil, fmt.Errorf("attachments: %q: %w", ref, err)
		}
		defer func() { _ = f.Close() }() // read only: nothing is lost
		st, err := f.Stat()
		if err != nil {
			return nil, fmt.Errorf("attachments: %q: %w", ref, err)
		}
		if !st.Mode().IsRegular() {
			return nil, fmt.Errorf("%w: %q is not a regular file", ErrRefused, ref)
		}
		if st.Size() > o.maxBytes {
			return nil, fmt.Errorf("%w: %q holds %d bytes, more than %d", ErrRefused, ref, st.Size(), o.maxBytes)
		}
		return readCapped(f, o.maxBytes, ref)
	}
}

// localPath checks a reference of FromPath and returns it as a path of the
// local system.
func localPath(ref string) (string, error) {
	switch {
	case ref == "", strings.ContainsAny(ref, "\\\x00"), strings.HasPrefix(ref, "/"), filepath.IsAbs(ref):
		return "", fmt.Errorf("%w: %q is not a relative slash-separated path", ErrRefused, ref)
	case !fs.ValidPath(ref):
		// fs.ValidPath refuses "..", ".", empty elements and a trailing
		// slash.
		return "", fmt.Errorf("%w: %q is not a clean path below the folder", ErrRefused, ref)
	}
	name := filepath.FromSlash(ref)
	if !filepath.IsLocal(name) {
		return "", fmt.Errorf("%w: %q is not local to the folder", ErrRefused, ref)
	}
	return name, nil
}

// readCapped reads r, refusing more than limit bytes.
func readCapped(r io.Reader, limit int64, ref string) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, fmt.Errorf("attachments: reading %q: %w", ref, err)
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("%w: %q holds more than %d bytes", ErrRefused, ref, limit)
	}
	return b, nil
}

// FromURL returns a resolver that fetches the reference as an https:// URL
// (http:// too with AllowHTTP) whose host is in allow, with a GET. An entry
// of allow is a host name or IP address ("files.example.com"), matching
// that host on any port, or a host and port ("127.0.0.1:8443"), matching
// that port alone; names are compared without regard to case. A redirect is
// followed (5 at most) only to an allowed URL; one off the list fails with
// ErrRefused. A reply other than 200, a body over the size cap
// (WithMaxBytes) or a fetch longer than the timeout (WithTimeout) fails the
// call. The URL is not put in the errors: it may hold a token.
func FromURL(allow []string, opts ...Option) Resolver {
	o := newOptions(opts)
	allowed := make([]string, 0, len(allow))
	for _, a := range allow {
		allowed = append(allowed, strings.ToLower(strings.TrimSpace(a)))
	}
	check := func(u *url.URL) error {
		switch {
		case u.Scheme == "https", u.Scheme == "http" && o.allowHTTP:
		default:
			return fmt.Errorf("%w: scheme %q not allowed", ErrRefused, u.Scheme)
		}
		if u.User != nil {
			return fmt.Errorf("%w: a URL with credentials", ErrRefused)
		}
		host, port := strings.ToLower(u.Hostname()), u.Port()
		if host == "" {
			return fmt.Errorf("%w: a URL without a host", ErrRefused)
		}
		if slices.Contains(allowed, host) || (port != "" && slices.Contains(allowed, net.JoinHostPort(host, port))) {
			return nil
		}
		return fmt.Errorf("%w: host %q is not on the allow-list", ErrRefused, host)
	}
	client := &http.Client{}
	if o.client != nil {
		c := *o.client
		client = &c
	}
	client.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if len(via) >= maxRedirects {
			return fmt.Errorf("%w: more than %d redirects", ErrRefused, maxRedirects)
		}
		return check(req.URL)
	}
	return func(ctx context.Context, ref string, _ mailqueue.ResolveInfo) ([]byte, error) {
		u, err := url.Parse(ref)
		if err != nil {
			return nil, fmt.Errorf("%w: not a URL", ErrRefused)
		}
		if err := check(u); err != nil {
			return nil, err
		}
		ctx, cancel := context.WithTimeout(ctx, o.timeout)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
		if err != nil {
			return nil, fmt.Errorf("%w: not a URL", ErrRefused)
		}
		resp, err := client.Do(req)
		if err != nil {
			return nil, fmt.Errorf("attachments: fetching from %s failed: %w", u.Host, stripURL(err))
		}
		defer func() { _ = resp.Body.Close() }() // read to the end or refused: nothing is lost
		if resp.StatusCode != http.StatusOK {
			return nil, fmt.Errorf("attachments: %s answered %d", u.Host, resp.StatusCode)
		}
		if resp.ContentLength > o.maxBytes {
			return nil, fmt.Errorf("%w: the attachment at %s holds %s bytes, more than %d", ErrRefused, u.Host, strconv.FormatInt(resp.ContentLength, 10), o.maxBytes)
		}
		b, err := io.ReadAll(io.LimitReader(resp.Body, o.maxBytes+1))
		if err != nil {
			return nil, fmt.Errorf("attachments: reading from %s failed: %w", u.Host, stripURL(err))
		}
		if int64(len(b)) > o.maxBytes {
			return nil, fmt.Errorf("%w: the attachment at %s holds more than %d bytes", ErrRefused, u.Host, o.maxBytes)
		}
		return b, nil
	}
}

// stripURL returns the cause of a *url.Error, without the URL it quotes.
func stripURL(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}
