// Package postfixtest runs a Postfix of its own for a test: Debian's
// postfix package (3.7), started from a configuration made in a temporary
// directory (its own config_directory, queue_directory and data_directory),
// listening on a free port of 127.0.0.1 only, with no relayhost, delivering
// the mail of its test domains to one Maildir, and stopped when the test
// ends. The system's Postfix, if any, is neither used nor started.
//
// A test that needs it calls Start, which skips the test, saying why, when
// /usr/sbin/postfix is absent or the test does not run as root (Postfix's
// master needs root); with MAILER_REQUIRE_POSTFIX=1 (as .ci/run sets) it
// fails the test instead. POSTFIXTEST_KEEP=1 keeps the temporary directory
// (configuration, Maildir, maillog) for a look after the test.
package postfixtest

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Binary is the postfix command the package needs.
const Binary = "/usr/sbin/postfix"

// master is Postfix's master daemon, run in the foreground.
const master = "/usr/lib/postfix/sbin/master"

// RequireEnv is the environment variable that turns a skip into a failure.
const RequireEnv = "MAILER_REQUIRE_POSTFIX"

// Options sets up a Postfix.
type Options struct {
	// Domains are the domains delivered to the Maildir (virtual mailbox
	// domains); every address of them is accepted. Empty means
	// "example.test".
	Domains []string
	// CertPEM and KeyPEM, when set, make smtpd offer STARTTLS with this
	// certificate and key.
	CertPEM, KeyPEM []byte
	// Main are more main.cf settings, such as anvil's limits; they win over
	// the package's.
	Main map[string]string
}

// Server is a running Postfix.
type Server struct {
	// Dir is the temporary directory that holds its configuration, queue,
	// Maildir and log.
	Dir string
	// Port is its SMTP port on 127.0.0.1.
	Port    int
	cmd     *exec.Cmd
	done    chan struct{} // closed when master has exited
	waitErr error         // master's exit, once done is closed
}

// Start configures and starts a Postfix for t and stops it when t ends. It
// skips t (or fails it under MAILER_REQUIRE_POSTFIX=1) when Postfix cannot
// run here, and fails t when it does not start.
func Start(t testing.TB, opts Options) *Server {
	t.Helper()
	if reason := unavailable(); reason != "" {
		if os.Getenv(RequireEnv) == "1" {
			t.Fatalf("postfixtest: %s, and %s=1", reason, RequireEnv)
		}
		t.Skipf("SKIPPED, NO POSTFIX: %s (apt-get install postfix, as .ci/run does, and run as root; %s=1 makes this a failure)", reason, RequireEnv)
	}
	s, err := start(t, opts)
	if err != nil {
		t.Fatalf("postfixtest: %v", err)
	}
	t.Cleanup(func() {
		s.stop()
		if t.Failed() {
			t.Logf("postfix log:\n%s", s.Log())
		}
	})
	return s
}

func unavailable() string {
	if _, err := os.Stat(Binary); err != nil {
		return Binary + " is absent"
	}
	if _, err := os.Stat(master); err != nil {
		return master + " is absent"
	}
	if os.Geteuid() != 0 {
		return "Postfix's master must start as root, and the test does not run as root"
	}
	if _, err := user.Lookup("postfix"); err != nil {
		return "no postfix user"
	}
	return ""
}

func start(t testing.TB, opts Options) (*Server, error) {
	dir, err := os.MkdirTemp("", "postfixtest-")
	if err != nil {
		return nil, err
	}
	if os.Getenv("POSTFIXTEST_KEEP") == "" {
		t.Cleanup(func() { _ = os.RemoveAll(dir) })
	}
	// Postfix's daemons run as the postfix user and the mailbox owner: they
	// must reach the directories below.
	if err := os.Chmod(dir, 0o755); err != nil {
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	s := &Server{Dir: dir, Port: port}
	if err := s.configure(opts); err != nil {
		return nil, err
	}
	// "postfix check" creates the queue's directories with their owners
	// and modes.
	if out, err := exec.Command(Binary, "-c", s.path("etc"), "check").CombinedOutput(); err != nil {
		return nil, fmt.Errorf("postfix check: %w: %s%s", err, out, s.Log())
	}
	s.cmd = exec.Command(master, "-c", s.path("etc"), "-d")
	s.cmd.Env = append(os.Environ(), "MAIL_CONFIG="+s.path("etc"))
	var out bytes.Buffer
	s.cmd.Stdout, s.cmd.Stderr = &out, &out
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := s.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start master: %w", err)
	}
	s.done = make(chan struct{})
	go func() { s.waitErr = s.cmd.Wait(); close(s.done) }()
	if err := s.waitListening(10 * time.Second); err != nil {
		s.stop()
		return nil, fmt.Errorf("%w; master said: %s; log:\n%s", err, out.String(), s.Log())
	}
	return s, nil
}

func (s *Server) path(p ...string) string { return filepath.Join(append([]string{s.Dir}, p...)...) }

// Maildir is the Maildir every message is delivered to.
func (s *Server) Maildir() string { return s.path("mail", "box") }

// Log returns Postfix's log so far.
func (s *Server) Log() string {
	b, _ := os.ReadFile(s.path("maillog"))
	return string(b)
}

func (s *Server) configure(opts Options) error {
	nobody, err := user.Lookup("nobody")
	if err != nil {
		return err
	}
	for _, d := range []string{"etc", "spool", "data", "mail"} {
		if err := os.MkdirAll(s.path(d), 0o755); err != nil {
			return err
		}
	}
	uid, _ := strconv.Atoi(nobody.Uid)
	gid, _ := strconv.Atoi(nobody.Gid)
	if err := os.Chown(s.path("mail"), uid, gid); err != nil {
		return err
	}
	if err := os.Chown(s.path("data"), postfixUID(), -1); err != nil {
		return err
	}
	domains := opts.Domains
	if len(domains) == 0 {
		domains = []string{"example.test"}
	}
	main := map[string]string{
		"compatibility_level":      "3.6",
		"queue_directory":          s.path("spool"),
		"data_directory":           s.path("data"),
		"mail_owner":               "postfix",
		"setgid_group":             "postdrop",
		"myhostname":               "mta.test",
		"mydomain":                 "test",
		"myorigin":                 "mta.test",
		"mydestination":            "",
		"relayhost":                "",
		"inet_interfaces":          "loopback-only",
		"inet_protocols":           "ipv4",
		"mynetworks":               "127.0.0.0/8",
		"maillog_file":             s.path("maillog"),
		"maillog_file_prefixes":    s.Dir,
		"smtputf8_enable":          "yes",
		"biff":                     "no",
		"alias_maps":               "",
		"alias_database":           "",
		"smtpd_relay_restrictions": "permit_mynetworks, reject_unauth_destination",
		// The headers as the client wrote them: no rewriting of addresses.
		"local_header_rewrite_clients":   "",
		"disable_mime_output_conversion": "yes",
		"virtual_mailbox_domains":        strings.Join(domains, ", "),
		"virtual_mailbox_base":           s.path("mail"),
		"virtual_mailbox_maps":           "static:box/",
		"virtual_uid_maps":               "static:" + nobody.Uid,
		"virtual_gid_maps":               "static:" + nobody.Gid,
		"virtual_minimum_uid":            "1",
		"virtual_mailbox_limit":          "0",
		"message_size_limit":             "10240000",
		// Deliver at once, and never wait on DNS for the test domains.
		"disable_dns_lookups":       "yes",
		"smtp_host_lookup":          "native",
		"queue_run_delay":           "1s",
		"minimal_backoff_time":      "1s",
		"maximal_backoff_time":      "2s",
		"smtpd_banner":              "$myhostname ESMTP",
		"smtpd_client_restrictions": "",
		"anvil_status_update_time":  "3600s",
	}
	if opts.CertPEM != nil {
		if err := os.WriteFile(s.path("etc", "cert.pem"), opts.CertPEM, 0o644); err != nil {
			return err
		}
		if err := os.WriteFile(s.path("etc", "key.pem"), opts.KeyPEM, 0o600); err != nil {
			return err
		}
		main["smtpd_tls_cert_file"] = s.path("etc", "cert.pem")
		main["smtpd_tls_key_file"] = s.path("etc", "key.pem")
		main["smtpd_tls_security_level"] = "may"
	}
	for k, v := range opts.Main {
		main[k] = v
	}
	keys := make([]string, 0, len(main))
	for k := range main {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "%s = %s\n", k, main[k])
	}
	if err := os.WriteFile(s.path("etc", "main.cf"), []byte(b.String()), 0o644); err != nil {
		return err
	}
	return os.WriteFile(s.path("etc", "master.cf"), []byte(fmt.Sprintf(masterCF, s.Port)), 0o644)
}

// masterCF runs the services a delivery to a Maildir needs, none chrooted
// (the queue is in a temporary directory), smtpd on 127.0.0.1 alone.
const masterCF = `127.0.0.1:%d inet n - n - - smtpd
pickup    unix  n       -       n       60      1       pickup
cleanup   unix  n       -       n       -       0       cleanup
qmgr      unix  n       -       n       300     1       qmgr
tlsmgr    unix  -       -       n       1000?   1       tlsmgr
rewrite   unix  -       -       n       -       -       trivial-rewrite
bounce    unix  -       -       n       -       0       bounce
defer     unix  -       -       n       -       0       bounce
trace     unix  -       -       n       -       0       bounce
verify    unix  -       -       n       -       1       verify
flush     unix  n       -       n       1000?   0       flush
proxymap  unix  -       -       n       -       -       proxymap
smtp      unix  -       -       n       -       -       smtp
showq     unix  n       -       n       -       -       showq
error     unix  -       -       n       -       -       error
retry     unix  -       -       n       -       -       error
discard   unix  -       -       n       -       -       discard
local     unix  -       n       n       -       -       local
virtual   unix  -       n       n       -       -       virtual
anvil     unix  -       -       n       -       1       anvil
scache    unix  -       -       n       -       1       scache
postlog   unix-dgram n  -       n       -       1       postlogd
`

func postfixUID() int {
	u, err := user.Lookup("postfix")
	if err != nil {
		return -1
	}
	n, _ := strconv.Atoi(u.Uid)
	return n
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer func() { _ = ln.Close() }()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// waitListening waits for smtpd to greet on the port. Its connections count
// against smtpd_client_connection_rate_limit, as any other from 127.0.0.1.
func (s *Server) waitListening(limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		select {
		case <-s.done:
			return fmt.Errorf("master exited: %w", s.waitErr)
		default:
		}
		c, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(s.Port)), time.Second)
		if err == nil {
			_ = c.SetDeadline(time.Now().Add(5 * time.Second))
			line, _ := bufio.NewReader(c).ReadString('\n')
			_, _ = c.Write([]byte("QUIT\r\n"))
			_ = c.Close()
			if strings.HasPrefix(line, "220") {
				return nil
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	return errors.New("smtpd did not greet within " + limit.String())
}

// stop stops master and its daemons (SIGTERM ends them all) and waits; its
// exit status, after SIGTERM, tells nothing.
func (s *Server) stop() {
	if s.cmd == nil || s.cmd.Process == nil {
		return
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(10 * time.Second):
		_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
		<-s.done
	}
	// master's children are in its process group; make sure none is left.
	_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
	s.cmd = nil
}

// Delivered is one message delivered to the Maildir: a copy for one
// recipient.
type Delivered struct {
	// Name is the file's name.
	Name string
	// Data is the file as Postfix wrote it (LF line endings).
	Data []byte
	// Recipient is the Delivered-To header's address.
	Recipient string
}

// Messages returns the messages in the Maildir (new/), sorted by name
// (the order of delivery).
func (s *Server) Messages() ([]Delivered, error) {
	dir := filepath.Join(s.Maildir(), "new")
	ents, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []Delivered
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		d := Delivered{Name: e.Name(), Data: b}
		for _, line := range strings.Split(string(b), "\n") {
			if line == "" {
				break
			}
			if v, ok := strings.CutPrefix(line, "Delivered-To: "); ok {
				d.Recipient = v
				break
			}
		}
		out = append(out, d)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// WaitMessages waits until the Maildir holds at least n messages, or the
// limit passes, and returns them.
func (s *Server) WaitMessages(n int, limit time.Duration) ([]Delivered, error) {
	deadline := time.Now().Add(limit)
	for {
		got, err := s.Messages()
		if err != nil || len(got) >= n || time.Now().After(deadline) {
			return got, err
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Added is the set of header fields Postfix puts above the message it
// delivers.
var Added = map[string]bool{"return-path": true, "x-original-to": true, "delivered-to": true, "received": true}

// StripAdded removes from the top of data the header fields Postfix added
// (Added, with their continuation lines) and returns the rest, or an error
// when a field above the rest is not one Postfix adds.
func StripAdded(data []byte) ([]byte, error) {
	rest := data
	for len(rest) > 0 {
		line, after, _ := bytes.Cut(rest, []byte("\n"))
		name, _, ok := bytes.Cut(line, []byte(":"))
		if !ok || !Added[strings.ToLower(string(name))] {
			return rest, nil
		}
		rest = after
		for len(rest) > 0 && (rest[0] == ' ' || rest[0] == '\t') {
			_, rest, _ = bytes.Cut(rest, []byte("\n"))
		}
	}
	return rest, nil
}
