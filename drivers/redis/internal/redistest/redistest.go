// Package redistest gives the tests of the Redis driver their servers: the
// standalone Redis at 127.0.0.1:6379 (MAILER_REDIS_ADDR overrides it), and a
// three-master Redis Cluster it starts itself on loopback ports with
// redis-server and redis-cli (StartCluster), torn down when its test ends.
//
// A test that needs a server skips, with the reason, when the server cannot
// be had, unless MAILER_REQUIRE_REDIS is set (CI sets it): then it fails.
// Nothing is ever flushed: each test works under a key prefix of its own
// (Prefix) and deletes its keys.
package redistest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// Addr is the standalone server's address.
func Addr() string {
	if a := os.Getenv("MAILER_REDIS_ADDR"); a != "" {
		return a
	}
	return "127.0.0.1:6379"
}

// Required reports whether a missing server fails the tests
// (MAILER_REQUIRE_REDIS is set) instead of skipping them.
func Required() bool { return os.Getenv("MAILER_REQUIRE_REDIS") != "" }

func unavailable(t testing.TB, what string, err error) {
	t.Helper()
	if Required() {
		t.Fatalf("%s is required (MAILER_REQUIRE_REDIS is set) and cannot be had: %v", what, err)
	}
	t.Skipf("SKIPPED: %s cannot be had (%v); set MAILER_REQUIRE_REDIS=1 to make this a failure", what, err)
}

// Standalone returns a client of the standalone server, closed when the
// test ends.
func Standalone(t testing.TB) *goredis.Client {
	t.Helper()
	c := goredis.NewClient(&goredis.Options{Addr: Addr(), PoolSize: 64})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := c.Ping(ctx).Err(); err != nil {
		_ = c.Close()
		unavailable(t, "Redis at "+Addr(), err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// Prefix returns a key prefix no other test uses.
func Prefix(t testing.TB) string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return "mailertest-" + hex.EncodeToString(b[:])
}

// StartCluster starts a three-master Redis Cluster on loopback ports
// (redis-server with cluster-enabled yes, its files in t.TempDir(), no
// persistence, maxmemory-policy noeviction; redis-cli --cluster create
// with no replicas), and returns a client of it. The servers are killed
// and the client closed when t ends; run the tests that share the cluster
// as subtests of t.
func StartCluster(t testing.TB) *goredis.ClusterClient {
	t.Helper()
	addrs, err := startCluster(t)
	if err != nil {
		unavailable(t, "a Redis Cluster of redis-server processes", err)
	}
	c := goredis.NewClusterClient(&goredis.ClusterOptions{Addrs: addrs, PoolSize: 64})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.ForEachMaster(ctx, func(ctx context.Context, n *goredis.Client) error { return n.Ping(ctx).Err() }); err != nil {
		_ = c.Close()
		t.Fatalf("the cluster does not answer: %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// freePort returns a loopback port that is free, and whose cluster bus port
// (port + 10000) is free too.
func freePort() (int, error) {
	for tries := 0; tries < 50; tries++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, err
		}
		p := l.Addr().(*net.TCPAddr).Port
		_ = l.Close()
		if p+10000 > 65535 {
			continue
		}
		b, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p+10000))
		if err != nil {
			continue
		}
		_ = b.Close()
		return p, nil
	}
	return 0, fmt.Errorf("no free port pair")
}

func startCluster(t testing.TB) ([]string, error) {
	server, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, err
	}
	cli, err := exec.LookPath("redis-cli")
	if err != nil {
		return nil, err
	}
	dir := t.TempDir()
	var addrs []string
	for i := 0; i < 3; i++ {
		port, err := freePort()
		if err != nil {
			return nil, err
		}
		nd := filepath.Join(dir, strconv.Itoa(port))
		if err := os.MkdirAll(nd, 0o755); err != nil {
			return nil, err
		}
		cmd := exec.Command(server, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--cluster-enabled", "yes",
			"--cluster-config-file", filepath.Join(nd, "nodes.conf"), "--cluster-node-timeout", "5000",
			"--save", "", "--appendonly", "no", "--dir", nd, "--maxmemory-policy", "noeviction",
			"--logfile", filepath.Join(nd, "redis.log"))
		if err := cmd.Start(); err != nil {
			return nil, err
		}
		t.Cleanup(func() {
			_ = cmd.Process.Kill()
			_, _ = cmd.Process.Wait()
		})
		addrs = append(addrs, "127.0.0.1:"+strconv.Itoa(port))
	}
	for _, a := range addrs {
		if err := waitPing(a, 10*time.Second); err != nil {
			return nil, err
		}
	}
	args := append([]string{"--cluster", "create"}, addrs...)
	args = append(args, "--cluster-replicas", "0", "--cluster-yes")
	if out, err := exec.Command(cli, args...).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("redis-cli --cluster create: %w: %s", err, out)
	}
	deadline := time.Now().Add(20 * time.Second)
	for _, a := range addrs {
		c := goredis.NewClient(&goredis.Options{Addr: a})
		for {
			info, err := c.ClusterInfo(context.Background()).Result()
			if err == nil && strings.Contains(info, "cluster_state:ok") {
				break
			}
			if time.Now().After(deadline) {
				_ = c.Close()
				return nil, fmt.Errorf("the cluster at %s is not ok (%s): %w", a, info, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
		_ = c.Close()
	}
	return addrs, nil
}

func waitPing(addr string, d time.Duration) error {
	c := goredis.NewClient(&goredis.Options{Addr: addr})
	defer func() { _ = c.Close() }()
	deadline := time.Now().Add(d)
	for {
		err := c.Ping(context.Background()).Err()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("redis-server at %s did not start: %w", addr, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// StartServer starts a standalone redis-server of its own on a loopback
// port with args added (such as "--maxmemory-policy", "allkeys-lru"), for
// a test that must change what a shared server must keep; it is killed
// when t ends.
func StartServer(t testing.TB, args ...string) *goredis.Client {
	t.Helper()
	server, err := exec.LookPath("redis-server")
	if err != nil {
		unavailable(t, "redis-server", err)
	}
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	all := append([]string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
		"--dir", dir, "--logfile", filepath.Join(dir, "redis.log")}, args...)
	cmd := exec.Command(server, all...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_, _ = cmd.Process.Wait()
	})
	addr := "127.0.0.1:" + strconv.Itoa(port)
	if err := waitPing(addr, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	c := goredis.NewClient(&goredis.Options{Addr: addr})
	t.Cleanup(func() { _ = c.Close() })
	return c
}
