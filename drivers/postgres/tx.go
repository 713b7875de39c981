package postgres

import (
	"context"
	"fmt"

	"github.com/alexify/mailer/mailqueue"
)

// EnqueueTx stores jobs in the caller's transaction; see
// mailqueue.TxDriver.
func (s *Source) EnqueueTx(ctx context.Context, tx any, jobs []mailqueue.NewJob) ([]mailqueue.EnqueueResult, error) {
	return nil, fmt.Errorf("postgres: %w", mailqueue.ErrTransactionUnsupported)
}
