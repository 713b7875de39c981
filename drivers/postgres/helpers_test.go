package postgres

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/alexify/mailer/conformance"
	"github.com/alexify/mailer/internal/pgtest"
)

// newSchema returns a migrated schema of its own on p, dropped when the
// test ends.
func newSchema(t testing.TB, p *pgxpool.Pool) string {
	t.Helper()
	schema := pgtest.SchemaName()
	pgtest.DropSchema(t, p, schema)
	if err := MigrateSchema(context.Background(), p, schema); err != nil {
		t.Fatalf("MigrateSchema: %v", err)
	}
	return schema
}

// newSource opens a source in a schema of its own on p.
func newSource(t testing.TB, p *pgxpool.Pool, opts Options) *Source {
	t.Helper()
	opts.Pool = p
	if opts.Schema == "" {
		opts.Schema = newSchema(t, p)
	}
	src, err := OpenSource(context.Background(), opts)
	if err != nil {
		t.Fatalf("OpenSource: %v", err)
	}
	return src
}

// advance moves the source's view of the database's clock forward: every
// statement adds the shift to now().
func (s *Source) advance(d time.Duration) { s.shift.Add(d.Microseconds()) }

// virtualHarness runs the contract on the database's clock shifted by the
// suite (Advance), so that it drives leases, delays and retention without
// sleeping.
func virtualHarness(p *pgxpool.Pool, opts Options) func(t *testing.T) conformance.Harness {
	return func(t *testing.T) conformance.Harness {
		src := newSource(t, p, opts)
		return conformance.Harness{
			Source: src, Now: src.now, Advance: src.advance,
			DedupeWindow: src.opts.DedupeWindow, RetainFailed: src.opts.RetainFailed, RetainData: src.opts.RetainData,
		}
	}
}

// serverHarness runs the contract on the database's own clock: the suite
// sleeps through leases of a second (not the suite's 400 ms: a statement
// on a loaded machine may take a good part of that, and the suite's
// timing would tell of the machine, not of the driver).
func serverHarness(p *pgxpool.Pool, opts Options) func(t *testing.T) conformance.Harness {
	return func(t *testing.T) conformance.Harness {
		src := newSource(t, p, opts)
		return conformance.Harness{Source: src, RetainData: src.opts.RetainData, Lease: time.Second}
	}
}
