package conformance_test

import "sync"

// tokens remembers the last token each job was leased with, for the broken
// source that ignores the caller's token.
var tokens = tokenMap{m: map[string]string{}}

type tokenMap struct {
	mu sync.Mutex
	m  map[string]string
}

func (t *tokenMap) set(id, tok string) { t.mu.Lock(); t.m[id] = tok; t.mu.Unlock() }
func (t *tokenMap) get(id string) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.m[id]
}
