package postgres

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/alexify/mailer/mail"
	"github.com/alexify/mailer/mail/idempotency"
)

// IdempotencyStore is the store of mail/idempotency's Transport on the
// idempotency table of the driver's schema, shared by every worker: a key
// (the job's id) holds a reservation (a token) while a run sends, then the
// receipt of the send, each until its time-to-live ends by the database's
// clock. Each method is one statement, atomic for its key: Reserve an
// INSERT ... ON CONFLICT that takes the key only when it holds no live
// entry, Complete and Release an UPDATE or DELETE that compares the token.
type IdempotencyStore struct {
	pool                                  *pgxpool.Pool
	reserve, get, complete, release, drop string
}

var _ idempotency.Store = (*IdempotencyStore)(nil)

// OpenIdempotencyStore returns the store of schema ("mailer" when empty)
// on pool. It returns an error wrapping ErrNotMigrated when the schema is
// not migrated.
func OpenIdempotencyStore(ctx context.Context, pool *pgxpool.Pool, schema string) (*IdempotencyStore, error) {
	if pool == nil {
		return nil, errors.New("postgres: OpenIdempotencyStore: the pool is required")
	}
	schema = cmp.Or(schema, DefaultSchema)
	if err := checkMigrated(ctx, pool, schema); err != nil {
		return nil, err
	}
	return &IdempotencyStore{
		pool: pool,
		reserve: inSchema(`INSERT INTO {schema}.idempotency AS i (key, token, receipt, expires_at)
VALUES ($1, $2, NULL, now() + $3::bigint * interval '1 microsecond')
ON CONFLICT (key) DO UPDATE SET token = EXCLUDED.token, receipt = NULL, expires_at = EXCLUDED.expires_at
	WHERE i.expires_at <= now()
RETURNING true`, schema),
		get: inSchema(`SELECT token, receipt FROM {schema}.idempotency WHERE key = $1 AND expires_at > now()`, schema),
		complete: inSchema(`UPDATE {schema}.idempotency SET receipt = $3, expires_at = now() + $4::bigint * interval '1 microsecond'
WHERE key = $1 AND token = $2 AND receipt IS NULL AND expires_at > now()`, schema),
		release: inSchema(`DELETE FROM {schema}.idempotency WHERE key = $1 AND token = $2 AND receipt IS NULL AND expires_at > now()`, schema),
		drop:    inSchema(`DELETE FROM {schema}.idempotency WHERE key = $1`, schema),
	}, nil
}

// Reserve implements idempotency.Store.
func (s *IdempotencyStore) Reserve(ctx context.Context, key, token string, ttl time.Duration) (*idempotency.Entry, error) {
	for range 3 {
		var ok bool
		err := s.pool.QueryRow(ctx, s.reserve, key, token, max(ttl.Microseconds(), 1)).Scan(&ok)
		if err == nil {
			return nil, nil
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return nil, fmt.Errorf("postgres: idempotency reserve: %w", err)
		}
		var e idempotency.Entry
		var receipt []byte
		err = s.pool.QueryRow(ctx, s.get, key).Scan(&e.Token, &receipt)
		if errors.Is(err, pgx.ErrNoRows) {
			continue // the entry ran out between the two statements: reserve again
		}
		if err != nil {
			return nil, fmt.Errorf("postgres: idempotency reserve: %w", err)
		}
		if receipt != nil {
			var r mail.Receipt
			if err := json.Unmarshal(receipt, &r); err != nil {
				return nil, fmt.Errorf("postgres: idempotency entry of %s: %w", key, err)
			}
			e.Receipt = &r
		}
		return &e, nil
	}
	return nil, errors.New("postgres: idempotency reserve: the key keeps running out under the call")
}

// Complete implements idempotency.Store.
func (s *IdempotencyStore) Complete(ctx context.Context, key, token string, receipt mail.Receipt, ttl time.Duration) (bool, error) {
	b, err := json.Marshal(receipt)
	if err != nil {
		return false, fmt.Errorf("postgres: idempotency complete: %w", err)
	}
	ct, err := s.pool.Exec(ctx, s.complete, key, token, b, max(ttl.Microseconds(), 1))
	if err != nil {
		return false, fmt.Errorf("postgres: idempotency complete: %w", err)
	}
	return ct.RowsAffected() == 1, nil
}

// Release implements idempotency.Store.
func (s *IdempotencyStore) Release(ctx context.Context, key, token string) (bool, error) {
	ct, err := s.pool.Exec(ctx, s.release, key, token)
	if err != nil {
		return false, fmt.Errorf("postgres: idempotency release: %w", err)
	}
	return ct.RowsAffected() == 1, nil
}

// Forget implements idempotency.Store: it deletes the entry of key,
// whoever holds it, so that the next send under key goes.
func (s *IdempotencyStore) Forget(ctx context.Context, key string) error {
	if _, err := s.pool.Exec(ctx, s.drop, key); err != nil {
		return fmt.Errorf("postgres: idempotency forget: %w", err)
	}
	return nil
}
