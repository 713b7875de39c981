package render

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"testing/fstest"
	"time"
)

// A template given up on stops at its next write of output.
func TestTimedOutTemplateStops(t *testing.T) {
	release := make(chan struct{})
	var calls atomic.Int64
	fsys := fstest.MapFS{"loop/en/body.txt": &fstest.MapFile{Data: []byte("{{range .big}}{{slow}}{{end}}")}}
	r, err := New(fsys, Options{
		Timeout: 5 * time.Millisecond,
		Funcs: map[string]any{"slow": func() string {
			calls.Add(1)
			<-release
			return "."
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	ended := make(chan struct{})
	r.afterRender = func() { close(ended) }
	big := make([]any, 1_000_000)
	if _, err := r.Render(context.Background(), Request{Template: "loop", Context: map[string]any{"big": big}}); !errors.Is(err, ErrTimeout) {
		t.Fatalf("got %v, want ErrTimeout", err)
	}
	close(release)
	<-ended
	if n := calls.Load(); n > 2 {
		t.Errorf("the helper ran %d times after the timeout, want it to stop at the next write", n)
	}
}
