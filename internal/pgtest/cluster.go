//go:build linux

package pgtest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// Cluster is a PostgreSQL cluster of one test's own (initdb in a temporary
// directory, the postgres server a child of the test on a free loopback
// port), that the test may stop, kill and start again on the same port and
// data, as a restart of the server does. It is killed and its directory
// removed when the test ends.
type Cluster struct {
	t    testing.TB
	bin  string // the folder of initdb and postgres
	dir  string // the data directory
	port int
	cred *syscall.Credential // the postgres user's, when the test runs as root

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{} // closed when cmd has exited
}

// StartCluster makes a cluster with initdb (trust auth, user postgres) and
// starts it. Without PostgreSQL's binaries the test is skipped, or failed
// when MAILER_REQUIRE_POSTGRES is set. As root, initdb and the server run
// as the postgres user (PostgreSQL refuses to run as root).
func StartCluster(t testing.TB) *Cluster {
	t.Helper()
	bin, err := binDir()
	if err != nil {
		if Required() {
			t.Fatalf("PostgreSQL's initdb is required (MAILER_REQUIRE_POSTGRES is set): %v", err)
		}
		t.Skipf("SKIPPED: the test starts a cluster of its own and finds no initdb (%v); set MAILER_REQUIRE_POSTGRES=1 to make this a failure", err)
	}
	c := &Cluster{t: t, bin: bin}
	top, err := os.MkdirTemp("", "mailer-pgcluster-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(top) })
	c.dir = filepath.Join(top, "data")
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			t.Fatalf("pgtest: running as root, and no postgres user to run the cluster as: %v", err)
		}
		uid, _ := strconv.ParseUint(u.Uid, 10, 32)
		gid, _ := strconv.ParseUint(u.Gid, 10, 32)
		c.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
		if err := os.Chown(top, int(uid), int(gid)); err != nil {
			t.Fatal(err)
		}
	}
	initdb := c.command(filepath.Join(bin, "initdb"), "-D", c.dir, "-U", "postgres", "-A", "trust", "--no-sync", "-E", "UTF8")
	if out, err := initdb.CombinedOutput(); err != nil {
		t.Fatalf("pgtest: initdb: %v\n%s", err, out)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c.port = l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	t.Cleanup(c.Kill)
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	return c
}

// binDir finds the folder of initdb: on the PATH, or Debian's
// /usr/lib/postgresql/N/bin, the newest.
func binDir() (string, error) {
	if p, err := exec.LookPath("initdb"); err == nil {
		return filepath.Dir(p), nil
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	if len(dirs) == 0 {
		return "", errors.New("no initdb on the PATH nor in /usr/lib/postgresql/*/bin")
	}
	sort.Strings(dirs)
	return filepath.Dir(dirs[len(dirs)-1]), nil
}

func (c *Cluster) command(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(name, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: c.cred, Pdeathsig: syscall.SIGKILL}
	return cmd
}

// URL is the cluster's connection string.
func (c *Cluster) URL() string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", c.port)
}

// Start starts the server (again, after Stop or Kill) and waits up to 30
// seconds until it answers.
func (c *Cluster) Start() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cmd != nil {
		return errors.New("pgtest: the cluster runs already")
	}
	cmd := c.command(filepath.Join(c.bin, "postgres"), "-D", c.dir, "-p", strconv.Itoa(c.port), "-k", filepath.Dir(c.dir),
		"-c", "listen_addresses=127.0.0.1", "-c", "fsync=off", "-c", "max_connections=200")
	log, err := os.OpenFile(filepath.Join(filepath.Dir(c.dir), "postgres.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		_ = log.Close()
		return fmt.Errorf("pgtest: start postgres: %w", err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); _ = log.Close(); close(exited) }()
	c.cmd, c.exited = cmd, exited
	deadline := time.Now().Add(30 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		conn, err := pgx.Connect(ctx, c.URL())
		if err == nil {
			_ = conn.Close(ctx)
			cancel()
			return nil
		}
		cancel()
		if time.Now().After(deadline) {
			return fmt.Errorf("pgtest: the cluster does not answer: %w", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Kill kills the server with SIGQUIT (an immediate shutdown: no checkpoint,
// the next start recovers from the WAL, as after a crash) and waits for it
// to exit; SIGKILL after 10 seconds. Kill on a server not running does
// nothing.
func (c *Cluster) Kill() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cmd == nil {
		return
	}
	_ = c.cmd.Process.Signal(syscall.SIGQUIT)
	select {
	case <-c.exited:
	case <-time.After(10 * time.Second):
		_ = c.cmd.Process.Kill()
		<-c.exited
	}
	c.cmd = nil
}

// Restart kills the server (Kill) and starts it again on the same port and
// data.
func (c *Cluster) Restart() error {
	c.Kill()
	return c.Start()
}
