package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/alexify/mailer/internal/pgtest"
	"github.com/alexify/mailer/mail/file"
)

// TestSignup: a signup commits the user and its welcome mail, which the
// worker writes; a second signup of the address is refused (409) and
// enqueues nothing; a bad address is refused (400).
func TestSignup(t *testing.T) {
	pool := pgtest.Pool(t)
	ctx := context.Background()
	queueSchema, appSchema := pgtest.SchemaName(), pgtest.SchemaName()
	pgtest.DropSchema(t, pool, queueSchema)
	pgtest.DropSchema(t, pool, appSchema)
	if _, err := pool.Exec(ctx, "CREATE SCHEMA "+appSchema); err != nil {
		t.Fatal(err)
	}
	app, err := open(ctx, pool, queueSchema, appSchema)
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	files, err := file.New(out)
	if err != nil {
		t.Fatal(err)
	}
	stop, err := app.work(files)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	post := func(email string) int {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodPost, "/signup", strings.NewReader(url.Values{"email": {email}}.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		app.ServeHTTP(rec, req)
		return rec.Code
	}
	for _, tc := range []struct {
		email string
		want  int
	}{{"ada@example.com", http.StatusCreated}, {"ada@example.com", http.StatusConflict}, {"not an address", http.StatusBadRequest}} {
		if got := post(tc.email); got != tc.want {
			t.Errorf("POST /signup email=%s: %d, want %d", tc.email, got, tc.want)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	var emls []string
	for time.Now().Before(deadline) {
		emls, _ = filepath.Glob(filepath.Join(out, "*.eml"))
		if len(emls) > 0 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if len(emls) != 1 {
		t.Fatalf("%d messages written, want the one welcome", len(emls))
	}
	b, err := os.ReadFile(emls[0])
	if err != nil || !strings.Contains(string(b), "Welcome aboard") {
		t.Errorf("the message: %v, %q", err, b)
	}
	st, err := app.pq.Stats(ctx)
	for err == nil && st.Accepted == 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
		st, err = app.pq.Stats(ctx)
	}
	if err != nil || st.Queued != 0 || st.Accepted != 1 {
		t.Errorf("Stats = %+v, %v; want the one job accepted", st, err)
	}
}
