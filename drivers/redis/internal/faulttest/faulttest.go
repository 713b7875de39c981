// Package faulttest gives the fault tests of the Redis driver
// (drivers/redis/faults_e2e_test.go, issue 10 point 11) the faults they
// cause and the numbers they measure: a redis-server of a test's own that
// the test kills and starts again on the same port (RedisServer), a gate in
// front of an SMTP server that stops accepting connections and starts again
// on the same port (Gate), and the tally of a run (Tally, Measure).
//
// Every process and listener it starts is stopped when its test ends
// (t.Cleanup), and every file it writes is in t.TempDir(). A test that needs
// redis-server skips, saying why, when the binary is missing, unless
// MAILER_REQUIRE_REDIS is set: then it fails (redistest.Required).
package faulttest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/alexify/mailer/drivers/redis/internal/redistest"
)

// FreePort returns a loopback TCP port that was free a moment ago: it
// listens on 127.0.0.1:0 and closes the listener.
func FreePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("faulttest: no free port: %v", err)
	}
	p := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	return p
}

// RedisServer is a redis-server process of one test, on a loopback port of
// its own and with its files in a directory of its own, that the test may
// kill and start again on the same port and directory (so that an
// append-only file is read back).
type RedisServer struct {
	t    testing.TB
	bin  string
	port int
	dir  string
	args []string

	mu  sync.Mutex
	cmd *exec.Cmd
}

// StartRedis starts redis-server on a free loopback port, with no RDB
// snapshots, its files in a temporary directory and args added after the
// defaults (such as "--appendonly", "yes"), and waits until it answers
// PING. The server is killed when the test ends. Without a redis-server
// binary the test is skipped, or failed when MAILER_REQUIRE_REDIS is set.
func StartRedis(t testing.TB, args ...string) *RedisServer {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		if redistest.Required() {
			t.Fatalf("redis-server is required (MAILER_REQUIRE_REDIS is set) and cannot be found: %v", err)
		}
		t.Skipf("SKIPPED: the fault tests start their own redis-server, and none is installed (%v); set MAILER_REQUIRE_REDIS=1 to make this a failure", err)
	}
	s := &RedisServer{t: t, bin: bin, port: FreePort(t), dir: t.TempDir(), args: args}
	t.Cleanup(s.Kill)
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	return s
}

// Addr is the server's address, 127.0.0.1:port.
func (s *RedisServer) Addr() string { return "127.0.0.1:" + strconv.Itoa(s.port) }

// Dir is the server's directory (its log, its append-only files).
func (s *RedisServer) Dir() string { return s.dir }

// Start starts the server (again, after Kill) on its port and directory,
// and waits up to 10 seconds until it answers PING.
func (s *RedisServer) Start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		return errors.New("faulttest: redis-server runs already")
	}
	all := append([]string{"--port", strconv.Itoa(s.port), "--bind", "127.0.0.1", "--save", "",
		"--dir", s.dir, "--logfile", filepath.Join(s.dir, "redis.log")}, s.args...)
	cmd := exec.Command(s.bin, all...)
	DieWithParent(cmd)
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("faulttest: start redis-server: %w", err)
	}
	s.cmd = cmd
	if err := waitPing(s.Addr(), 10*time.Second); err != nil {
		return fmt.Errorf("%w (log: %s)", err, s.logTail())
	}
	return nil
}

// Kill kills the server with SIGKILL and waits for it to exit. With
// --appendfsync always, every write the server acknowledged is on disk: a
// kill loses none. Kill on a server not running does nothing.
func (s *RedisServer) Kill() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Signal(syscall.SIGKILL)
	_ = s.cmd.Wait()
	s.cmd = nil
}

// Client returns a client of the server, closed when the test ends.
func (s *RedisServer) Client() *goredis.Client {
	c := goredis.NewClient(&goredis.Options{Addr: s.Addr(), PoolSize: 32})
	s.t.Cleanup(func() { _ = c.Close() })
	return c
}

func (s *RedisServer) logTail() string {
	b, _ := os.ReadFile(filepath.Join(s.dir, "redis.log"))
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return string(b)
}

func waitPing(addr string, d time.Duration) error {
	c := goredis.NewClient(&goredis.Options{Addr: addr, MaxRetries: -1})
	defer func() { _ = c.Close() }()
	deadline := time.Now().Add(d)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := c.Ping(ctx).Err()
		cancel()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("faulttest: redis-server at %s does not answer: %w", addr, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Gate is a TCP relay on a loopback port of its own in front of a server
// (an SMTP server of mail/smtptest): a client that dials the gate talks to
// the server. Stop closes the gate's listener, so that a dial is refused as
// by a stopped server, while the sessions in flight go on to their end (a
// graceful stop: what a restart of an MTA looks like to a client that
// connects once a message). Open listens again on the same port.
type Gate struct {
	target string
	port   int

	mu    sync.Mutex
	ln    net.Listener
	conns map[net.Conn]struct{}
	done  bool
	wg    sync.WaitGroup
}

// NewGate opens a gate to target (host:port) on a free loopback port. The
// gate and every session through it are closed when the test ends.
func NewGate(t testing.TB, target string) *Gate {
	t.Helper()
	g := &Gate{target: target, conns: map[net.Conn]struct{}{}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("faulttest: gate: %v", err)
	}
	g.port = ln.Addr().(*net.TCPAddr).Port
	g.serve(ln)
	t.Cleanup(g.close)
	return g
}

// Port is the gate's port, the same before and after a Stop.
func (g *Gate) Port() int { return g.port }

// Stop closes the listener: a dial to the gate is refused until Open.
func (g *Gate) Stop() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.ln != nil {
		_ = g.ln.Close()
		g.ln = nil
	}
}

// Open listens again on the gate's port, trying for up to 5 seconds in
// case the port is not yet free. An open gate stays as it is.
func (g *Gate) Open() error {
	g.mu.Lock()
	open := g.ln != nil
	g.mu.Unlock()
	if open {
		return nil
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(g.port))
		if err == nil {
			g.serve(ln)
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("faulttest: the gate cannot listen on its port again: %w", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (g *Gate) serve(ln net.Listener) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.done {
		_ = ln.Close()
		return
	}
	g.ln = ln
	g.wg.Add(1)
	go func() {
		defer g.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			g.relay(c)
		}
	}()
}

// relay joins c to a connection of its own to the target, both ways, until
// either side closes.
func (g *Gate) relay(c net.Conn) {
	up, err := net.DialTimeout("tcp", g.target, 5*time.Second)
	if err != nil {
		_ = c.Close()
		return
	}
	g.mu.Lock()
	if g.done {
		g.mu.Unlock()
		_ = c.Close()
		_ = up.Close()
		return
	}
	g.conns[c], g.conns[up] = struct{}{}, struct{}{}
	g.mu.Unlock()
	var once sync.Once
	end := func() {
		once.Do(func() {
			_ = c.Close()
			_ = up.Close()
			g.mu.Lock()
			delete(g.conns, c)
			delete(g.conns, up)
			g.mu.Unlock()
		})
	}
	g.wg.Add(2)
	go func() { defer g.wg.Done(); defer end(); _, _ = io.Copy(up, c) }()
	go func() { defer g.wg.Done(); defer end(); _, _ = io.Copy(c, up) }()
}

// close stops the gate for good: the listener and every session.
func (g *Gate) close() {
	g.mu.Lock()
	g.done = true
	if g.ln != nil {
		_ = g.ln.Close()
		g.ln = nil
	}
	for c := range g.conns {
		_ = c.Close()
	}
	g.mu.Unlock()
	g.wg.Wait()
}

// ExitWithParent exits the child process it is called in once its parent
// is gone (its parent process id changes), checking twice a second: a
// worker child outlives no test, even where DieWithParent does nothing.
func ExitWithParent() {
	ppid := os.Getppid()
	go func() {
		for {
			time.Sleep(500 * time.Millisecond)
			if os.Getppid() != ppid {
				os.Exit(3)
			}
		}
	}()
}
