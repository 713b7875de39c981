package codestest

import (
	"log/slog"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/alexify/mailer/gen/codes"
)

func TestLookup(t *testing.T) {
	for _, c := range []codes.Code{codes.QueueInvalidJob, codes.QueueJobStarted, codes.RenderFailed, codes.AuditFailed, codes.DeliveryUnknown, codes.MailerAuditFailed} {
		info, ok := codes.Lookup(c)
		if !ok || info.Code != c || info.What == "" || c.Info() != info || c.Level() != info.Level || c.String() != string(c) {
			t.Errorf("Lookup(%s) = %+v, %v", c, info, ok)
		}
	}
	want := codes.Info{Code: codes.QueueInvalidJob, Where: codes.WhereFailure, State: codes.StateFailed, Level: slog.LevelError,
		What: "The data of a job is not that of a mail job; at enqueue the same code is returned with the path of the bad value.",
		Spec: "queue.md, What a job holds"}
	if diff := cmp.Diff(want, codes.QueueInvalidJob.Info()); diff != "" {
		t.Errorf("QueueInvalidJob.Info() (-want +got):\n%s", diff)
	}
	if info := codes.QueueJobStarted.Info(); info.State != "" || info.Where != codes.WhereLog || info.Level != slog.LevelDebug {
		t.Errorf("QueueJobStarted.Info() = %+v", info)
	}
	if _, ok := codes.Lookup("no.such.code"); ok {
		t.Error("Lookup of an unknown code succeeded")
	}
	if codes.Code("no.such.code").Level() != slog.LevelError || codes.Code("no.such.code").Info() != (codes.Info{}) {
		t.Error("an unknown code: want LevelError and the zero Info")
	}
}

func TestAll(t *testing.T) {
	all := codes.All()
	if len(all) == 0 || all[0].Code != codes.QueueInvalidJob || all[len(all)-1].Code != codes.MailerQueueRetainFailed {
		t.Fatalf("All() is not in the file's order: %v ... %v", all[0].Code, all[len(all)-1].Code)
	}
	seen := map[codes.Code]bool{}
	for _, info := range all {
		if seen[info.Code] {
			t.Errorf("%s twice", info.Code)
		}
		seen[info.Code] = true
		if (info.Where == codes.WhereFailure) != (info.State != "") {
			t.Errorf("%s: where %s, state %q", info.Code, info.Where, info.State)
		}
	}
	all[0].Code = "changed"
	if codes.All()[0].Code != codes.QueueInvalidJob {
		t.Error("All shares its slice")
	}
}
