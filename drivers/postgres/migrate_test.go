package postgres

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/alexify/mailer/internal/pgtest"
)

// TestMigrations: the embedded migrations are numbered from 1 with no gap,
// each with a header comment.
func TestMigrations(t *testing.T) {
	ms, err := loadMigrations()
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) == 0 || LatestVersion() != len(ms) {
		t.Fatalf("%d migrations, latest %d", len(ms), LatestVersion())
	}
}

// TestMigrateConcurrently: several goroutines migrating one schema at once
// all succeed, the schema ends at the latest version with each migration
// applied once, and migrating again does nothing.
func TestMigrateConcurrently(t *testing.T) {
	p := pgtest.Pool(t)
	ctx := context.Background()
	schema := pgtest.SchemaName()
	pgtest.DropSchema(t, p, schema)
	if _, err := OpenSource(ctx, Options{Pool: p, Schema: schema}); !errors.Is(err, ErrNotMigrated) {
		t.Fatalf("OpenSource before Migrate: %v, want ErrNotMigrated", err)
	}
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = MigrateSchema(ctx, p, schema)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("migration %d: %v", i, err)
		}
	}
	if err := MigrateSchema(ctx, p, schema); err != nil {
		t.Fatalf("MigrateSchema again: %v", err)
	}
	if v, err := SchemaVersion(ctx, p, schema); err != nil || v != LatestVersion() {
		t.Fatalf("SchemaVersion = %d, %v; want %d", v, err, LatestVersion())
	}
	var n int
	if err := p.QueryRow(ctx, "SELECT count(*) FROM "+quoteSchema(schema)+".migrations").Scan(&n); err != nil || n != LatestVersion() {
		t.Errorf("the version table holds %d rows, %v; want one per migration, %d", n, err, LatestVersion())
	}
	if _, err := OpenSource(ctx, Options{Pool: p, Schema: schema}); err != nil {
		t.Errorf("OpenSource after Migrate: %v", err)
	}
}
