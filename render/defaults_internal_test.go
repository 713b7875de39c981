package render

import (
	"testing"
	"testing/fstest"
	"time"
)

// TestDefaultTimeout: a renderer given no Timeout bounds a render by 30
// seconds, the spec's renderTimeoutMilliseconds. The bound is on the wall
// clock, so the test reads it rather than wait for it.
func TestDefaultTimeout(t *testing.T) {
	t.Parallel()
	r, err := New(fstest.MapFS{"a/en/body.txt": {Data: []byte("x")}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if r.timeout != 30*time.Second {
		t.Errorf("a render is bounded by %v, want 30s", r.timeout)
	}
	r, err = New(fstest.MapFS{"a/en/body.txt": {Data: []byte("x")}}, Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if r.timeout != time.Second {
		t.Errorf("Options.Timeout 1s bounds a render by %v", r.timeout)
	}
}
