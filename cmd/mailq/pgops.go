package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"

	"github.com/jackc/pgx/v5/pgxpool"

	pgdriver "github.com/alexify/mailer/drivers/postgres"
)

// postgresUsage is the part of the usage text of the PostgreSQL store's
// flags.
const postgresUsage = `      --postgres URL [--schema S] [--queue Q]
                          a PostgreSQL queue: URL is postgres://user[:password]@host:port/db
                          (any libpq connection string); S is the driver's schema
                          ("mailer"), Q the queue in it ("mail"); the workers'
                          IdempotencyStore is the schema's (retry --resend)
`

// migrateUsage is the usage text of mailq migrate.
const migrateUsage = `  mailq migrate --postgres URL [--schema S]
                          create the PostgreSQL driver's schema or bring it to this
                          version (the embedded migrations, under an advisory lock:
                          safe when several deploys run it at once); run it before
                          the workers, which never migrate
`

// postgresFlags name a PostgreSQL queue. Its queue is the --queue flag
// that the Redis flags register (both default to "mail").
type postgresFlags struct {
	url, schema string
}

// register adds the PostgreSQL flags to fs.
func (f *postgresFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.url, "postgres", "", "the PostgreSQL server: postgres://user@host:port/db")
	fs.StringVar(&f.schema, "schema", pgdriver.DefaultSchema, "the PostgreSQL driver's schema")
}

// pgPool connects to the URL.
func pgPool(ctx context.Context, url string) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, usageError{fmt.Errorf("--postgres: %w", err)}
	}
	cfg.MaxConns = 4
	return pgxpool.NewWithConfig(ctx, cfg)
}

// openPostgres opens the PostgreSQL queue f names with the settings its
// workers stored (UseStored: opening it writes nothing), and its schema's
// idempotency store for retry --resend.
func openPostgres(ctx context.Context, f postgresFlags, queue string, log *slog.Logger) (*store, error) {
	pool, err := pgPool(ctx, f.url)
	if err != nil {
		return nil, err
	}
	q, err := pgdriver.Open(ctx, pgdriver.Options{Pool: pool, Schema: f.schema, Queue: queue, UseStored: true, Logger: log})
	if err != nil {
		pool.Close()
		return nil, err
	}
	idem, err := pgdriver.OpenIdempotencyStore(ctx, pool, f.schema)
	if err != nil {
		pool.Close()
		return nil, err
	}
	return &store{op: q, name: q.QueueName(), forget: idem.Forget, close: pool.Close}, nil
}

// migrate runs mailq migrate and returns the exit status.
func migrate(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("mailq migrate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var f postgresFlags
	f.register(fs)
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if f.url == "" || fs.NArg() > 0 {
		fmt.Fprint(stderr, "mailq migrate: name the store: --postgres URL\n\n"+migrateUsage)
		return 2
	}
	pool, err := pgPool(ctx, f.url)
	if errors.As(err, new(usageError)) {
		fmt.Fprintf(stderr, "mailq migrate: %v\n", err)
		return 2
	}
	if err != nil {
		fmt.Fprintf(stderr, "mailq migrate: %v\n", err)
		return 1
	}
	defer pool.Close()
	before, err := pgdriver.SchemaVersion(ctx, pool, f.schema)
	if err == nil {
		err = pgdriver.MigrateSchema(ctx, pool, f.schema)
	}
	if err != nil {
		fmt.Fprintf(stderr, "mailq migrate: %v\n", err)
		return 1
	}
	after := pgdriver.LatestVersion()
	if before == after {
		fmt.Fprintf(stdout, "schema %s is at version %d: nothing to do\n", f.schema, after)
	} else {
		fmt.Fprintf(stdout, "schema %s migrated from version %d to %d\n", f.schema, before, after)
	}
	return 0
}
