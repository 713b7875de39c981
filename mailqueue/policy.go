package mailqueue

import (
	"fmt"
	"strings"
	"time"
)

// The retention every store keeps its finished jobs for, unless its
// options say otherwise (spec: "Defaults"). Every driver takes these, so
// that a job is a duplicate for as long whatever the store.
const (
	// DefaultDedupeWindow is how long an accepted job is kept: the window
	// in which an enqueue under its key is told a duplicate (a day).
	DefaultDedupeWindow = 24 * time.Hour
	// DefaultRetainFailed is how long a job failed for good is kept, for
	// an operator to look at and retry (a week).
	DefaultRetainFailed = 7 * 24 * time.Hour
)

// OptionError is the error of a constructor that refuses an option: a
// value out of range or unknown, or a required one missing. Every
// constructor of the kit returns one for a bad option (mailqueue.New,
// Queue.NewWorker, memory.New and NewSource, polling.New, redis.Open and
// OpenSource), before it does anything else; test for it with errors.As.
type OptionError struct {
	// Package is the package of the constructor, as in "memory".
	Package string
	// Option is the path of the option, as in "Options.Fairness".
	Option string
	// Value is the value refused; nil for a required option missing.
	Value any
	// Rule says what is wrong with the value, as in "is negative" or "is
	// not one of none, tenant".
	Rule string
}

// Error says the package, the option, its value and the rule it breaks:
// memory: Options.Fairness "tenants" is not one of none, tenant.
func (e *OptionError) Error() string {
	switch v := e.Value.(type) {
	case nil:
		return fmt.Sprintf("%s: %s %s", e.Package, e.Option, e.Rule)
	case string, Fairness, RetainData:
		return fmt.Sprintf("%s: %s %q %s", e.Package, e.Option, v, e.Rule)
	default:
		return fmt.Sprintf("%s: %s %v %s", e.Package, e.Option, v, e.Rule)
	}
}

// CheckNotNegative returns an *OptionError of pkg when the duration or
// number of the option is negative: zero takes the default, a negative
// value is a mistake. For the drivers' validate methods.
func CheckNotNegative[T int | int64 | time.Duration](pkg, option string, v T) error {
	if v < 0 {
		return &OptionError{Package: pkg, Option: option, Value: v, Rule: "is negative"}
	}
	return nil
}

// CheckOneOf returns an *OptionError of pkg when v is set and is not one of
// the values: "" takes the default.
func CheckOneOf[T ~string](pkg, option string, v T, values ...T) error {
	if v == "" {
		return nil
	}
	names := make([]string, len(values))
	for i, w := range values {
		if v == w {
			return nil
		}
		names[i] = string(w)
	}
	return &OptionError{Package: pkg, Option: option, Value: string(v), Rule: "is not one of " + strings.Join(names, ", ")}
}

// AllFairness lists the fairness policies, in the order of their
// constants.
var AllFairness = []Fairness{FairnessNone, FairnessTenant}

// AllRetainData lists the retention policies, in the order of their
// constants.
var AllRetainData = []RetainData{RetainFailedData, RetainAllData, RetainNoData}

// Valid reports whether f is one of the fairness policies ("" is not:
// the options that take one read "" as the default).
func (f Fairness) Valid() bool { return f == FairnessNone || f == FairnessTenant }

// Valid reports whether r is one of the retention policies ("" is not:
// the options that take one read "" as the default).
func (r RetainData) Valid() bool {
	return r == RetainFailedData || r == RetainAllData || r == RetainNoData
}

// RetainData says which finished jobs keep their message in the store. A
// job that drops it keeps its id, version and hash, so an enqueue again is
// still told a duplicate. Every driver takes it; the zero value is
// RetainFailedData (spec: "What a job holds", retainData).
type RetainData string

// The retention policies.
const (
	// RetainFailedData keeps the message of the failed jobs only, for a retry
	// by hand. The default.
	RetainFailedData RetainData = "failed"
	// RetainAllData keeps the message of every finished job.
	RetainAllData RetainData = "all"
	// RetainNoData keeps no message of a finished job.
	RetainNoData RetainData = "none"
)

// Fairness is how a store shares its workers among tenants. The zero value
// is FairnessNone (spec: "Tenants in turn").
type Fairness string

// The fairness policies.
const (
	// FairnessNone takes jobs by priority, then time. The default.
	FairnessNone Fairness = "none"
	// FairnessTenant takes a high job of any tenant first, then the tenants
	// in turn, a job each, the jobs of no tenant as one more.
	FairnessTenant Fairness = "tenant"
)

// JobState is where a stored job is, as a store's operations tell it
// (Inspector's Stats, Jobs and Get). A job moves queued -> running -> (accepted | failed |
// delivery_unknown), or back to queued on a retry, a release or a lease
// that ran out; RetryFailed moves a failed job back to queued.
type JobState string

// The states of a stored job.
const (
	// JobQueued: waiting to be due, or due and waiting for a worker. An
	// enqueue, a retry, a release, a lease that ran out and RetryFailed move
	// a job here; a reserve moves it to running.
	JobQueued JobState = "queued"
	// JobRunning: leased by a run. Its settle moves it on.
	JobRunning JobState = "running"
	// JobAccepted: done, the message accepted (Ack); kept for the dedupe
	// window (a day by default).
	JobAccepted JobState = "accepted"
	// JobFailed: failed for good (Fail); kept RetainFailed (a week by
	// default). RetryFailed moves it back to queued.
	JobFailed JobState = "failed"
	// JobDeliveryUnknown: failed for good, the message may have gone
	// (Fail); kept RetainFailed, and RetryFailed moves it back as it does
	// a failed job.
	JobDeliveryUnknown JobState = "delivery_unknown"
)
