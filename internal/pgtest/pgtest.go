// Package pgtest gives the tests of the PostgreSQL driver their server:
// the PostgreSQL at 127.0.0.1:5432 (user postgres, database postgres,
// trust auth; MAILER_POSTGRES_URL overrides it), and a schema of their own
// for each test (Schema), migrated and dropped when the test ends.
//
// A test that needs the server skips, saying why, when it cannot be had,
// unless MAILER_REQUIRE_POSTGRES is set (CI sets it): then it fails.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// URL is the server's connection string.
func URL() string {
	if u := os.Getenv("MAILER_POSTGRES_URL"); u != "" {
		return u
	}
	return "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"
}

// Required reports whether a missing server fails the tests
// (MAILER_REQUIRE_POSTGRES is set) instead of skipping them.
func Required() bool { return os.Getenv("MAILER_REQUIRE_POSTGRES") != "" }

// Pool returns a pool of the server, closed when the test ends.
func Pool(t testing.TB) *pgxpool.Pool {
	t.Helper()
	return PoolOf(t, URL())
}

// PoolOf returns a pool of the server at url, closed when the test ends.
func PoolOf(t testing.TB, url string) *pgxpool.Pool {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	cfg.MaxConns = 32
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	p, err := pgxpool.NewWithConfig(ctx, cfg)
	if err == nil {
		err = p.Ping(ctx)
	}
	if err != nil {
		if p != nil {
			p.Close()
		}
		if Required() {
			t.Fatalf("PostgreSQL at %s is required (MAILER_REQUIRE_POSTGRES is set) and cannot be had: %v", url, err)
		}
		t.Skipf("SKIPPED: PostgreSQL at %s cannot be had (%v); set MAILER_REQUIRE_POSTGRES=1 to make this a failure", url, err)
	}
	t.Cleanup(p.Close)
	return p
}

// SchemaName returns a schema name no other test uses.
func SchemaName() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return "mailertest_" + hex.EncodeToString(b[:])
}

// DropSchema drops the schema and what it holds when the test ends.
func DropSchema(t testing.TB, p *pgxpool.Pool, schema string) {
	t.Helper()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if _, err := p.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE"); err != nil {
			t.Errorf("pgtest: dropping schema %s: %v", schema, err)
		}
	})
}
