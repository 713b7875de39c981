package postgres

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/alexify/mailer/internal/pgtest"
	"github.com/alexify/mailer/mailqueue"
)

// TestOptionsRefused: each option OpenSource cannot honour is an
// *mailqueue.OptionError naming it, before any connection is made.
func TestOptionsRefused(t *testing.T) {
	pool := &pgxpool.Pool{} // never used: the options are refused first
	for _, tc := range []struct {
		name   string
		opts   Options
		option string
	}{
		{"no pool", Options{}, "Options.Pool"},
		{"fairness", Options{Pool: pool, Fairness: "tenants"}, "Options.Fairness"},
		{"retain data", Options{Pool: pool, RetainData: "some"}, "Options.RetainData"},
		{"dedupe", Options{Pool: pool, DedupeWindow: -time.Second}, "Options.DedupeWindow"},
		{"retain failed", Options{Pool: pool, RetainFailed: -time.Second}, "Options.RetainFailed"},
		{"lease", Options{Pool: pool, LeaseDuration: -time.Second}, "Options.LeaseDuration"},
		{"poll", Options{Pool: pool, PollInterval: -time.Second}, "Options.PollInterval"},
		{"close", Options{Pool: pool, CloseTimeout: -time.Second}, "Options.CloseTimeout"},
		{"prune interval", Options{Pool: pool, PruneInterval: -time.Second}, "Options.PruneInterval"},
		{"prune batch", Options{Pool: pool, PruneBatch: -1}, "Options.PruneBatch"},
		{"schema", Options{Pool: pool, Schema: string(make([]byte, 64))}, "Options.Schema"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := OpenSource(context.Background(), tc.opts)
			var oe *mailqueue.OptionError
			if !errors.As(err, &oe) || oe.Package != "postgres" || oe.Option != tc.option {
				t.Errorf("OpenSource = %v; want a postgres OptionError for %s", err, tc.option)
			}
		})
	}
}

// TestSettingsStored: the first OpenSource of a queue records its
// settings; a later one with other settings is refused, one with zero
// fields takes the stored, and UseStored takes them whatever it is told.
func TestSettingsStored(t *testing.T) {
	p := pgtest.Pool(t)
	ctx := context.Background()
	schema := newSchema(t, p)
	first, err := OpenSource(ctx, Options{Pool: p, Schema: schema, Fairness: mailqueue.FairnessTenant, DedupeWindow: time.Hour, RetainData: mailqueue.RetainAllData})
	if err != nil {
		t.Fatal(err)
	}
	if got := first.QueueName(); got != schema+".mail" {
		t.Errorf("QueueName = %q, want %q", got, schema+".mail")
	}
	for _, o := range []Options{{Fairness: mailqueue.FairnessNone}, {DedupeWindow: 2 * time.Hour}, {RetainFailed: time.Hour}, {RetainData: mailqueue.RetainNoData}} {
		o.Pool, o.Schema = p, schema
		if _, err := OpenSource(ctx, o); !errors.Is(err, ErrSettingsMismatch) {
			t.Errorf("OpenSource(%+v) = %v, want ErrSettingsMismatch", o, err)
		}
	}
	for _, o := range []Options{{}, {UseStored: true, RetainData: mailqueue.RetainNoData}} {
		o.Pool, o.Schema = p, schema
		s, err := OpenSource(ctx, o)
		if err != nil {
			t.Fatal(err)
		}
		if got := s.Options(); got.Fairness != mailqueue.FairnessTenant || got.DedupeWindow != time.Hour || got.RetainFailed != mailqueue.DefaultRetainFailed || got.RetainData != mailqueue.RetainAllData {
			t.Errorf("the settings of OpenSource(%+v): %+v; want the stored ones", o, got)
		}
	}
	other, err := OpenSource(ctx, Options{Pool: p, Schema: schema, Queue: "other", UseStored: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := other.Options(); got.Fairness != mailqueue.FairnessNone || got.DedupeWindow != mailqueue.DefaultDedupeWindow {
		t.Errorf("UseStored of a queue never opened: %+v, want the defaults", got)
	}
	var n int
	if err := p.QueryRow(ctx, "SELECT count(*) FROM "+quoteSchema(schema)+".queues WHERE queue = 'other'").Scan(&n); err != nil || n != 0 {
		t.Errorf("UseStored wrote the queue's row: %d, %v", n, err)
	}
}
