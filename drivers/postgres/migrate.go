package postgres

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"hash/fnv"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// migrationFiles are the numbered migrations, applied in their order:
// migrations/NNNN_name.sql, each with a header comment of what it does;
// {schema} stands for the driver's schema, quoted.
//
//go:embed migrations/*.sql
var migrationFiles embed.FS

// ErrNotMigrated is returned by OpenSource (and the idempotency store and
// the audit sink) when the schema is not at the version of this driver:
// run Migrate (or mailq migrate --postgres URL) first. A worker never
// migrates by itself.
var ErrNotMigrated = errors.New("postgres: the schema is not migrated to this driver's version (run postgres.Migrate or mailq migrate)")

// Migration is one embedded migration.
type Migration struct {
	// Version is its number, from 1; Name the rest of its file name.
	Version int
	Name    string
	sql     string
}

// Migrations returns the embedded migrations, by version.
func Migrations() []Migration {
	ms, err := loadMigrations()
	if err != nil {
		panic(err) // the embedded files are checked by the tests
	}
	return ms
}

// LatestVersion is the version of the last embedded migration: the one
// OpenSource requires.
func LatestVersion() int {
	ms := Migrations()
	return ms[len(ms)-1].Version
}

func loadMigrations() ([]Migration, error) {
	entries, err := fs.ReadDir(migrationFiles, "migrations")
	if err != nil {
		return nil, err
	}
	var out []Migration
	for _, e := range entries {
		num, name, ok := strings.Cut(strings.TrimSuffix(e.Name(), ".sql"), "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v < 1 {
			return nil, fmt.Errorf("postgres: migration %s: want NNNN_name.sql", e.Name())
		}
		b, err := migrationFiles.ReadFile(path.Join("migrations", e.Name()))
		if err != nil {
			return nil, err
		}
		if !strings.HasPrefix(string(b), "-- ") {
			return nil, fmt.Errorf("postgres: migration %s has no header comment", e.Name())
		}
		out = append(out, Migration{Version: v, Name: name, sql: string(b)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Version < out[j].Version })
	for i, m := range out {
		if m.Version != i+1 {
			return nil, fmt.Errorf("postgres: migration %d is missing", i+1)
		}
	}
	return out, nil
}

// quoteSchema returns the schema as a quoted identifier.
func quoteSchema(schema string) string { return pgx.Identifier{schema}.Sanitize() }

// inSchema replaces {schema} in q by the quoted schema.
func inSchema(q, schema string) string { return strings.ReplaceAll(q, "{schema}", quoteSchema(schema)) }

// lockKey is the key of the advisory lock of what, in schema: a 64-bit
// FNV-1a of both, so that two schemas never wait for each other.
func lockKey(what, schema string) int64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte("mailer/" + what + "/" + schema))
	return int64(h.Sum64()) //nolint:gosec // a lock key: any 64 bits will do
}

// Migrate applies the embedded migrations the default schema ("mailer")
// lacks; see MigrateSchema.
func Migrate(ctx context.Context, pool *pgxpool.Pool) error {
	return MigrateSchema(ctx, pool, DefaultSchema)
}

// MigrateSchema creates schema when it does not exist and applies the
// embedded migrations it lacks, in their order, in one transaction under
// an advisory lock of the schema: several processes migrating at once
// wait for each other, and the later ones find nothing to do. The
// versions applied are kept in schema.migrations. It is idempotent, and
// never called by a worker: run it (or mailq migrate --postgres URL) at
// deploy time. It refuses a schema whose version is newer than this
// driver's.
func MigrateSchema(ctx context.Context, pool *pgxpool.Pool, schema string) error {
	if schema == "" {
		return errors.New("postgres: migrate: the schema is empty")
	}
	ms, err := loadMigrations()
	if err != nil {
		return err
	}
	return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", lockKey("migrate", schema)); err != nil {
			return fmt.Errorf("postgres: migrate: the advisory lock: %w", err)
		}
		if _, err := tx.Exec(ctx, inSchema(`CREATE SCHEMA IF NOT EXISTS {schema};
CREATE TABLE IF NOT EXISTS {schema}.migrations (
    version integer PRIMARY KEY,
    name text NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT now()
)`, schema)); err != nil {
			return fmt.Errorf("postgres: migrate: the version table: %w", err)
		}
		var have int
		if err := tx.QueryRow(ctx, inSchema("SELECT coalesce(max(version), 0) FROM {schema}.migrations", schema)).Scan(&have); err != nil {
			return fmt.Errorf("postgres: migrate: %w", err)
		}
		if have > len(ms) {
			return fmt.Errorf("postgres: migrate: schema %s is at version %d, newer than this driver's %d", schema, have, len(ms))
		}
		for _, m := range ms[have:] {
			if _, err := tx.Exec(ctx, inSchema(m.sql, schema)); err != nil {
				return fmt.Errorf("postgres: migration %04d_%s: %w", m.Version, m.Name, err)
			}
			if _, err := tx.Exec(ctx, inSchema("INSERT INTO {schema}.migrations (version, name) VALUES ($1, $2)", schema), m.Version, m.Name); err != nil {
				return fmt.Errorf("postgres: migration %04d_%s: %w", m.Version, m.Name, err)
			}
		}
		return nil
	})
}

// SchemaVersion returns the version the schema is migrated to: 0 when it
// has no version table.
func SchemaVersion(ctx context.Context, q interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}, schema string) (int, error) {
	var exists bool
	if err := q.QueryRow(ctx, "SELECT to_regclass($1) IS NOT NULL", quoteSchema(schema)+".migrations").Scan(&exists); err != nil {
		return 0, fmt.Errorf("postgres: %w", err)
	}
	if !exists {
		return 0, nil
	}
	var v int
	if err := q.QueryRow(ctx, inSchema("SELECT coalesce(max(version), 0) FROM {schema}.migrations", schema)).Scan(&v); err != nil {
		return 0, fmt.Errorf("postgres: %w", err)
	}
	return v, nil
}

// checkMigrated returns an error wrapping ErrNotMigrated unless the schema
// is at LatestVersion.
func checkMigrated(ctx context.Context, pool *pgxpool.Pool, schema string) error {
	v, err := SchemaVersion(ctx, pool, schema)
	if err != nil {
		return err
	}
	if want := LatestVersion(); v != want {
		return fmt.Errorf("%w: schema %s is at version %d, want %d", ErrNotMigrated, schema, v, want)
	}
	return nil
}
