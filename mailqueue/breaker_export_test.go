package mailqueue

// BreakerHolds reports whether the worker's circuit breaker holds the
// driver's reserves (its gate is shut), for the tests of package
// mailqueue_test.
func BreakerHolds(w *Worker) bool {
	select {
	case <-w.br.Gate():
		return false
	default:
		return true
	}
}

// BreakerState returns the state of the worker's circuit breaker: closed,
// open or half_open.
func BreakerState(w *Worker) string { return w.br.stateName() }

// BreakerWaiting reports whether the worker's circuit breaker is open and
// waits for the clock before its next probe: nothing happens until the
// clock moves.
func BreakerWaiting(w *Worker) bool { return w.br.waiting() }
