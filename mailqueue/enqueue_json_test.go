package mailqueue

import (
	"bytes"
	"context"
	"errors"
	"math"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/alexify/mailer/clock"
	"github.com/alexify/mailer/gen/codes"
	"github.com/alexify/mailer/gen/jobv1"
	"github.com/alexify/mailer/internal/strictjson"
)

// testReadLimit is what a worker of a queue of the default config reads.
const testReadLimit = 2 * DefaultMaxJobBytes

// time0 is the fake clock's start in this package's tests.
var time0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// storeDriver keeps what is enqueued, so that a test can open the stored
// bytes as a worker does.
type storeDriver struct{ jobs []NewJob }

func (d *storeDriver) Enqueue(_ context.Context, jobs []NewJob) ([]EnqueueResult, error) {
	out := make([]EnqueueResult, len(jobs))
	for i, j := range jobs {
		d.jobs = append(d.jobs, j)
		out[i] = EnqueueResult{ID: j.ID}
	}
	return out, nil
}

func (*storeDriver) Work(Handler, WorkOptions) (Runner, error) { return nil, nil }

func newJSONQueue(t testing.TB, cfg Config) (*Queue, *storeDriver) {
	t.Helper()
	d := &storeDriver{}
	cfg.Driver = d
	if cfg.Clock == nil {
		cfg.Clock = clock.NewFake(time0)
	}
	q, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return q, d
}

const jsonHead = `{"v":1,"kind":"template","template":"welcome","from":"shop@example.com","idempotencyKey":"k1",`

// TestEnqueueJSONRefusals is a table of every refusal of EnqueueJSON, each
// a queue.invalid_job at the pointer of the bad value, with nothing stored.
func TestEnqueueJSONRefusals(t *testing.T) {
	deep := func(n int) string { return strings.Repeat("[", n) + `"leaf"` + strings.Repeat("]", n) }
	tests := []struct {
		name, in            string
		cfg                 Config
		pointer, path, rule string
		reason              string
	}{
		{"a name twice", jsonHead + `"to":["ada@example.com"],"to":["eve@example.net"]}`, Config{}, "/to", "to", "json", "appears twice"},
		{"a name twice, escaped", jsonHead + `"to":["ada@example.com"],"\u0074o":["eve@example.net"]}`, Config{}, "/to", "to", "json", "appears twice"},
		{"a name twice in the context", jsonHead + `"to":["ada@example.com"],"context":{"a":1,"b":2,"a":3}}`, Config{}, "/context/a", "context.a", "json", "appears twice"},
		{"invalid UTF-8", jsonHead + "\"to\":[\"ada@example.com\"],\"subject\":\"Hi \xc3\x28\"}", Config{}, "/subject", "subject", "json", "not valid UTF-8"},
		{"invalid UTF-8 in a context name", jsonHead + "\"to\":[\"ada@example.com\"],\"context\":{\"\xff\":1}}", Config{}, "/context", "context", "json", "member name that is not valid UTF-8"},
		{"an escaped lone high surrogate", jsonHead + `"to":["ada@example.com"],"subject":"Hi \ud800"}`, Config{}, "/subject", "subject", "json", "lone high surrogate"},
		{"an escaped lone low surrogate", jsonHead + `"to":["ada@example.com"],"context":{"s":["\udfff"]}}`, Config{}, "/context/s/0", "context.s[0]", "json", "lone low surrogate"},
		{"2^53+1", jsonHead + `"to":["ada@example.com"],"context":{"id":9007199254740993}}`, Config{}, "/context/id", "context.id", "json", "beyond 2^53-1"},
		{"-2^53", jsonHead + `"to":["ada@example.com"],"context":{"id":-9007199254740992}}`, Config{}, "/context/id", "context.id", "json", "beyond 2^53-1"},
		{"2^53 as 9.007199254740992e15", jsonHead + `"to":["ada@example.com"],"context":{"id":9.007199254740992e15}}`, Config{}, "/context/id", "context.id", "json", "beyond 2^53-1"},
		{"beyond a double", jsonHead + `"to":["ada@example.com"],"context":{"n":[1,1e400]}}`, Config{}, "/context/n/1", "context.n[1]", "json", "beyond what a double"},
		{"nested past the limit", jsonHead + `"to":["ada@example.com"],"context":{"v":` + deep(64) + `}}`, Config{},
			"/context/v" + strings.Repeat("/0", 64), "context.v" + strings.Repeat("[0]", 64), "json", "nests deeper"},
		{"not JSON", jsonHead + `"to":["ada@example.com"]`, Config{}, "", "", "json", "not valid JSON"},
		{"two values", jsonHead + `"to":["ada@example.com"]} {}`, Config{}, "", "", "json", "data after"},
		{"not an object", `["ada@example.com"]`, Config{}, "", "", "type", ""},
		{"maxAttempts 0", jsonHead + `"to":["ada@example.com"],"maxAttempts":0}`, Config{}, "/maxAttempts", "maxAttempts", "minimum", "at least 1"},
		{"priority empty", jsonHead + `"to":["ada@example.com"],"priority":""}`, Config{}, "/priority", "priority", "enum", ""},
		{"no v", `{"kind":"template","template":"welcome","from":"shop@example.com","to":["ada@example.com"]}`, Config{}, "/v", "v", "required", ""},
		{"sealed", `{"v":1,"hash":"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef","enqueuedAt":"2024-01-01T00:00:00Z","enc":"c2VhbGVk"}`, Config{}, "/enc", "enc", "clear", "sealed"},
		{"over MaxJobBytes, unread", jsonHead + `"to":["ada@example.com"],"subject":"` + strings.Repeat("x", 2000) + `"}`, Config{MaxJobBytes: 1024}, "", "", "maxJobBytes", "it was not read"},
		{"over MaxJobBytes once stored", jsonHead + `"to":["ada@example.com"],"context":{"t":"` + strings.Repeat("x", 860) + `"}}`, Config{MaxJobBytes: 1024}, "", "", "maxJobBytes", "the job is"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			q, d := newJSONQueue(t, tc.cfg)
			_, err := q.EnqueueJSON(t.Context(), []byte(tc.in))
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("EnqueueJSON = %v, want an *Error", err)
			}
			got := []any{e.Code, e.Index, e.Pointer, e.Path, e.Fields[0].Rule, strings.Contains(e.Reason, tc.reason)}
			want := []any{codes.QueueInvalidJob, -1, tc.pointer, tc.path, tc.rule, true}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("%v (-want +got):\n%s", err, diff)
			}
			if len(d.jobs) != 0 {
				t.Errorf("%d jobs stored", len(d.jobs))
			}
		})
	}
}

// TestEnqueueJSONLikeEnqueue: a job's JSON is enqueued as the job itself
// would be, and a worker opens what was stored, clear, signed and sealed.
func TestEnqueueJSONLikeEnqueue(t *testing.T) {
	data := []byte(jsonHead + ` "to" : ["Ada <ada@example.com>"], "context":{"n":[9007199254740991,1.50,1e21],"s":"\ud83d\ude00"},
		"maxAttempts":3,"scheduledAt":"2030-01-02T03:04:05.123456+02:00","headers":{"X-Campaign":"spring"}}`)
	codec, err := NewAESGCMCodec(bytes.Repeat([]byte{7}, 32))
	if err != nil {
		t.Fatal(err)
	}
	keys := []SigningKey{{ID: "k1", Secret: bytes.Repeat([]byte{9}, 32)}}
	for name, cfg := range map[string]Config{"clear": {}, "signed and sealed": {SigningKeys: keys, Codec: codec}} {
		t.Run(name, func(t *testing.T) {
			q, d := newJSONQueue(t, cfg)
			r, err := q.EnqueueJSON(t.Context(), data)
			if err != nil {
				t.Fatal(err)
			}
			job, o := openJob(t.Context(), d.jobs[0].Data, q.openParams(d.jobs[0].ID))
			if o != nil {
				t.Fatalf("openJob: %+v", o)
			}
			if job.MaxAttempts != 3 || d.jobs[0].MaxAttempts != 3 || job.To[0] != "Ada <ada@example.com>" || job.Context["s"] != "😀" {
				t.Errorf("opened %+v", job)
			}
			// The same job, typed, has the same id and hash.
			typed, _, err := jobv1.DecodeValue(mustDecode(t, data))
			if err != nil {
				t.Fatal(err)
			}
			q2, _ := newJSONQueue(t, cfg)
			r2, err := q2.Enqueue(t.Context(), typed)
			if err != nil {
				t.Fatal(err)
			}
			if r != r2 {
				t.Errorf("EnqueueJSON %+v, Enqueue %+v", r, r2)
			}
		})
	}
}

func mustDecode(t testing.TB, data []byte) map[string]any {
	t.Helper()
	obj, err := strictjson.DecodeObject(data)
	if err != nil {
		t.Fatal(err)
	}
	return obj
}

// TestEnqueueManyJSON: one item refused, none stored, its index told.
func TestEnqueueManyJSON(t *testing.T) {
	q, d := newJSONQueue(t, Config{})
	good := []byte(jsonHead + `"to":["ada@example.com"]}`)
	bad := []byte(jsonHead + `"to":["ada@example.com"],"to":["eve@example.net"]}`)
	_, err := q.EnqueueManyJSON(t.Context(), [][]byte{good, good, bad})
	var e *Error
	if !errors.As(err, &e) || e.Index != 2 || e.Pointer != "/to" || len(d.jobs) != 0 {
		t.Fatalf("EnqueueManyJSON = %v (index %d), %d stored; want job 2 refused at /to and none stored", err, e.Index, len(d.jobs))
	}
	rs, err := q.EnqueueManyJSON(t.Context(), [][]byte{good, []byte(strings.Replace(string(good), `"k1"`, `"k2"`, 1))})
	if err != nil || len(rs) != 2 || len(d.jobs) != 2 || rs[0].ID == rs[1].ID {
		t.Fatalf("EnqueueManyJSON = %+v, %v; %d stored", rs, err, len(d.jobs))
	}
	if rs, err := q.EnqueueManyJSON(t.Context(), nil); rs != nil || err != nil {
		t.Errorf("no items: %v, %v", rs, err)
	}
}

// TestErrorCap: a report lists the first MaxFieldErrors bad values and
// counts the rest, from EnqueueJSON and from Enqueue.
func TestErrorCap(t *testing.T) {
	const n = 500
	to := make([]string, n)
	for i := range to {
		to[i] = `"not a mailbox"`
	}
	q, _ := newJSONQueue(t, Config{})
	_, errJSON := q.EnqueueJSON(t.Context(), []byte(jsonHead+`"to":[`+strings.Join(to, ",")+`]}`))
	ctx := map[string]any{}
	for i := 0; i < n; i++ {
		ctx["v"+strconv.Itoa(i)] = math.NaN()
	}
	_, errTyped := q.Enqueue(t.Context(), &jobv1.Job{Kind: jobv1.KindTemplate, Template: "welcome", From: "shop@example.com", To: []string{"ada@example.com"}, Context: ctx})
	for name, err := range map[string]error{"EnqueueJSON": errJSON, "Enqueue": errTyped} {
		var e *Error
		if !errors.As(err, &e) {
			t.Fatalf("%s = %v", name, err)
		}
		if len(e.Fields) != MaxFieldErrors || len(e.Fields)+e.More < n {
			t.Errorf("%s: %d fields and %d more, want %d and the rest", name, len(e.Fields), e.More, MaxFieldErrors)
		}
		if want := "(and " + strconv.Itoa(len(e.Fields)+e.More-1) + " more)"; !strings.HasSuffix(err.Error(), want) {
			t.Errorf("%s: %q, want it to end in %q", name, err, want)
		}
	}
}

// allocated returns the bytes f allocates.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// bigJobs are a stored job of 64 MiB and a job of two million bad
// recipients (11 MiB).
func bigJobs() (stored64MiB, recipients2M []byte) {
	stored64MiB = make([]byte, 0, 64<<20)
	stored64MiB = append(stored64MiB, `{"v":1,"kind":"content","subject":"x","content":{"text":"`...)
	stored64MiB = append(stored64MiB, bytes.Repeat([]byte("x"), 64<<20-100)...)
	stored64MiB = append(stored64MiB, `"},"from":"shop@example.com","to":["ada@example.com"]}`...)
	recipients2M = make([]byte, 0, 12<<20)
	recipients2M = append(recipients2M, jsonHead+`"to":[`...)
	for i := 0; i < 2_000_000; i++ {
		if i > 0 {
			recipients2M = append(recipients2M, ',')
		}
		recipients2M = append(recipients2M, `"x@@"`...) // not a mailbox
	}
	recipients2M = append(recipients2M, "]}"...)
	return stored64MiB, recipients2M
}

// TestSizeBeforeWork: a job over the limit is refused unread, at enqueue
// and at the worker, whatever its size: what is measured is the memory the
// refusal takes, not its time.
func TestSizeBeforeWork(t *testing.T) {
	stored, recipients := bigJobs()
	q, d := newJSONQueue(t, Config{})
	for name, data := range map[string][]byte{"64 MiB": stored, "2M recipients": recipients} {
		t.Run(name, func(t *testing.T) {
			var err error
			var o *opened
			enq := allocated(func() { _, err = q.EnqueueJSON(context.Background(), data) })
			open := allocated(func() { _, o = openJob(context.Background(), data, openParams{MaxBytes: q.cfg.readLimit()}) })
			t.Logf("%d bytes: EnqueueJSON allocates %d bytes to refuse it, openJob %d", len(data), enq, open)
			var e *Error
			if !errors.As(err, &e) || e.Fields[0].Rule != "maxJobBytes" || len(d.jobs) != 0 {
				t.Errorf("EnqueueJSON = %v, want a maxJobBytes refusal", err)
			}
			if o == nil || o.code != codes.QueueInvalidJob || o.action != Fail || !strings.Contains(o.reason, "not read") {
				t.Errorf("openJob = %+v, want it failed unread", o)
			}
			if enq > 16<<10 || open > 16<<10 {
				t.Errorf("the refusals allocate %d and %d bytes, want at most 16 KiB each", enq, open)
			}
		})
	}
}

// BenchmarkRefuseOversize measures the refusal of the jobs of
// TestSizeBeforeWork: go test -run '^$' -bench RefuseOversize -benchmem.
func BenchmarkRefuseOversize(b *testing.B) {
	stored, recipients := bigJobs()
	q, _ := newJSONQueue(b, Config{})
	b.Run("EnqueueJSON/2M-recipients", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_, _ = q.EnqueueJSON(b.Context(), recipients)
		}
	})
	b.Run("openJob/64MiB", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_, _ = openJob(b.Context(), stored, openParams{MaxBytes: q.cfg.readLimit()})
		}
	})
}

// TestReadLimit: a worker reads twice MaxJobBytes, the opened part of a
// sealed job too, and no config overflows it.
func TestReadLimit(t *testing.T) {
	if got := (Config{MaxJobBytes: DefaultMaxJobBytes}).readLimit(); got != 512<<10 {
		t.Errorf("readLimit = %d, want 512 KiB", got)
	}
	if got := (Config{MaxJobBytes: math.MaxInt}).readLimit(); got != math.MaxInt {
		t.Errorf("readLimit of MaxInt = %d", got)
	}
	if maxContextDepth+2 != strictjson.MaxDepth {
		t.Errorf("a context's depth %d and the JSON's %d disagree", maxContextDepth, strictjson.MaxDepth)
	}
	// A sealed job whose opened part is over the limit fails unread.
	q, d := newJSONQueue(t, Config{Codec: &base64Codec{}})
	if _, err := q.EnqueueJSON(t.Context(), []byte(jsonHead+`"to":["ada@example.com"]}`)); err != nil {
		t.Fatal(err)
	}
	p := q.openParams(d.jobs[0].ID)
	p.Codec = bigCodec{}
	_, o := openJob(t.Context(), d.jobs[0].Data, p)
	if o == nil || o.action != Fail || !strings.Contains(o.reason, "the opened part of the sealed job is") {
		t.Errorf("openJob = %+v, want the opened part refused unread", o)
	}
}

// bigCodec opens every job to a text over the read limit.
type bigCodec struct{}

func (bigCodec) Encode(context.Context, []byte, []byte) (string, error) {
	return "", errors.New("not used")
}
func (bigCodec) Decode(context.Context, string, []byte) ([]byte, error) {
	return bytes.Repeat([]byte(" "), testReadLimit+1), nil
}

// TestIntegralNumbers: an integer field takes an integral value however it
// is written (1.0, 3.0, 30e-1), at enqueue and at the worker, as JSON
// Schema's integer does and as a store that re-encodes numbers may write
// it; the canonical JSON, and so the hash, is that of 1 and 3.
func TestIntegralNumbers(t *testing.T) {
	for _, text := range []string{
		`{"v":1.0,"kind":"template","template":"welcome","from":"shop@example.com","idempotencyKey":"k1","to":["ada@example.com"],"maxAttempts":3.0}`,
		`{"v":1e0,"kind":"template","template":"welcome","from":"shop@example.com","idempotencyKey":"k1","to":["ada@example.com"],"maxAttempts":30e-1}`,
	} {
		if err := jobv1.Validate([]byte(text)); err != nil {
			t.Errorf("Validate(%s) = %v", text, err)
		}
		q, d := newJSONQueue(t, Config{})
		if _, err := q.EnqueueJSON(t.Context(), []byte(text)); err != nil {
			t.Fatalf("EnqueueJSON(%s) = %v", text, err)
		}
		stored := d.jobs[0].Data
		if !bytes.Contains(stored, []byte(`"maxAttempts":3,`)) {
			t.Fatalf("stored %s, want maxAttempts 3", stored)
		}
		// A store that writes the number back as 3.0: the worker reads it.
		rewritten := bytes.Replace(stored, []byte(`"maxAttempts":3,`), []byte(`"maxAttempts":3.0,`), 1)
		job, o := openJob(t.Context(), rewritten, q.openParams(d.jobs[0].ID))
		if o != nil || job.MaxAttempts != 3 {
			t.Errorf("openJob of 3.0 = %+v, %+v", job, o)
		}
	}
	if err := jobv1.Validate([]byte(`{"v":1,"kind":"template","template":"welcome","from":"shop@example.com","to":["ada@example.com"],"maxAttempts":3.5}`)); err == nil {
		t.Error("Validate took maxAttempts 3.5")
	}
}
