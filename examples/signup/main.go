// Command signup is the outbox of the PostgreSQL driver as a program: an
// HTTP handler that inserts a user and enqueues the user's welcome mail in
// one transaction, so that both commit or neither does (no user without
// a mail, no mail for a signup that failed), and a worker that writes each
// message as an .eml file (the file transport) instead of sending it.
//
//	go run ./examples/signup -postgres postgres://postgres@127.0.0.1:5432/postgres -out DIR
//	curl -d email=ada@example.com localhost:8080/signup
//
// It migrates the driver's schema at its start, for the example's sake: a
// service runs Migrate (or mailq migrate --postgres URL) at deploy time,
// and its workers never do.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"log/slog"
	"net/http"
	"net/mail"
	"os"
	"os/signal"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/alexify/mailer/drivers/postgres"
	"github.com/alexify/mailer/gen/jobv1"
	"github.com/alexify/mailer/mail/file"
	"github.com/alexify/mailer/mail/idempotency"
	"github.com/alexify/mailer/mailqueue"
)

func main() {
	url := flag.String("postgres", "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable", "the PostgreSQL to use")
	out := flag.String("out", os.TempDir(), "the folder the .eml files go to")
	addr := flag.String("addr", "localhost:8080", "the HTTP address to listen on")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, *url, *out, *addr); err != nil {
		log.Fatal(err)
	}
}

func run(ctx context.Context, url, out, addr string) error {
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		return err
	}
	defer pool.Close()
	app, err := open(ctx, pool, postgres.DefaultSchema, "public")
	if err != nil {
		return err
	}
	files, err := file.New(out)
	if err != nil {
		return err
	}
	stopWorker, err := app.work(files)
	if err != nil {
		return err
	}
	defer stopWorker()
	srv := &http.Server{Addr: addr, Handler: app, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	if err := srv.ListenAndServe(); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// App is the signup service: its pool, the users table and the mail queue.
type App struct {
	pool  *pgxpool.Pool
	users string // the users table, quoted
	queue *mailqueue.Queue
	pq    *postgres.Queue
	log   *slog.Logger
}

// open migrates the queue's schema, makes the users table in appSchema
// and returns the app.
func open(ctx context.Context, pool *pgxpool.Pool, queueSchema, appSchema string) (*App, error) {
	if err := postgres.MigrateSchema(ctx, pool, queueSchema); err != nil {
		return nil, err
	}
	users := pgx.Identifier{appSchema, "users"}.Sanitize()
	if _, err := pool.Exec(ctx, "CREATE TABLE IF NOT EXISTS "+users+" (email text PRIMARY KEY, created_at timestamptz NOT NULL DEFAULT now())"); err != nil {
		return nil, err
	}
	pq, err := postgres.Open(ctx, postgres.Options{Pool: pool, Schema: queueSchema})
	if err != nil {
		return nil, err
	}
	// The audit sink on the same database: the "queued" event of each job
	// is written in the signup's transaction too.
	audit, err := postgres.OpenAudit(ctx, pool, queueSchema)
	if err != nil {
		return nil, err
	}
	queue, err := mailqueue.New(mailqueue.Config{Driver: pq, Audit: audit})
	if err != nil {
		return nil, err
	}
	return &App{pool: pool, users: users, queue: queue, pq: pq, log: slog.Default()}, nil
}

// ServeHTTP serves POST /signup with a form field email: 201 when the user
// and the welcome mail are committed, 409 when the address signed up
// before (nothing is enqueued), 400 for an address that is none.
func (a *App) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/signup" || r.Method != http.MethodPost {
		http.NotFound(w, r)
		return
	}
	addr, err := mail.ParseAddress(r.FormValue("email"))
	if err != nil {
		http.Error(w, "an email address is required", http.StatusBadRequest)
		return
	}
	err = a.signup(r.Context(), addr.Address)
	var pe *pgconn.PgError
	switch {
	case errors.As(err, &pe) && pe.Code == "23505": // unique_violation
		http.Error(w, "signed up already", http.StatusConflict)
	case err != nil:
		a.log.Error("signup failed", "err", err)
		http.Error(w, "the signup failed; try again", http.StatusInternalServerError)
	default:
		w.WriteHeader(http.StatusCreated)
		_, _ = fmt.Fprintln(w, "welcome")
	}
}

// signup inserts the user and enqueues the welcome mail in one
// transaction: the job is invisible to the workers until the commit, and
// gone if anything fails before it.
func (a *App) signup(ctx context.Context, email string) error {
	return pgx.BeginFunc(ctx, a.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "INSERT INTO "+a.users+" (email) VALUES ($1)", email); err != nil {
			return err
		}
		_, err := a.queue.EnqueueTx(ctx, tx, &jobv1.Job{
			Kind:    jobv1.KindContent,
			Subject: "Welcome",
			Content: &jobv1.Content{Text: "Welcome aboard. Your account is ready."},
			From:    "Shop <no-reply@example.com>",
			To:      []string{email},
			// One welcome per address, whatever retries the client makes.
			IdempotencyKey: "welcome:" + email,
		})
		return err
	})
}

// work starts a worker that sends through files, once per job
// (IdempotencyTransport on the driver's store), and returns its stop.
func (a *App) work(files *file.Transport) (func(), error) {
	store, err := postgres.OpenIdempotencyStore(context.Background(), a.pool, a.pq.Source().Options().Schema)
	if err != nil {
		return nil, err
	}
	transport, err := idempotency.New(files, store, idempotency.Options{})
	if err != nil {
		return nil, err
	}
	worker, err := a.queue.NewWorker(mailqueue.WorkerConfig{Transport: transport, Concurrency: 5})
	if err != nil {
		return nil, err
	}
	if err := worker.Start(); err != nil {
		return nil, err
	}
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = worker.Close(ctx)
	}, nil
}
