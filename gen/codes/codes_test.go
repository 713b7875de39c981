package codes

import (
	"log/slog"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestLookup(t *testing.T) {
	for _, c := range []Code{QueueInvalidJob, QueueJobStarted, RenderFailed, AuditFailed, DeliveryUnknown, MailerAuditFailed} {
		info, ok := Lookup(c)
		if !ok || info.Code != c || info.What == "" || c.Info() != info || c.Level() != info.Level || c.String() != string(c) {
			t.Errorf("Lookup(%s) = %+v, %v", c, info, ok)
		}
	}
	want := Info{Code: QueueInvalidJob, Where: WhereFailure, State: StateFailed, Level: slog.LevelError,
		What: "The data of a job is not that of a mail job; at enqueue the same code is returned with the path of the bad value.",
		Spec: "queue.md, What a job holds"}
	if diff := cmp.Diff(want, QueueInvalidJob.Info()); diff != "" {
		t.Errorf("QueueInvalidJob.Info() (-want +got):\n%s", diff)
	}
	if info := QueueJobStarted.Info(); info.State != "" || info.Where != WhereLog || info.Level != slog.LevelDebug {
		t.Errorf("QueueJobStarted.Info() = %+v", info)
	}
	if _, ok := Lookup("no.such.code"); ok {
		t.Error("Lookup of an unknown code succeeded")
	}
	if Code("no.such.code").Level() != slog.LevelError || Code("no.such.code").Info() != (Info{}) {
		t.Error("an unknown code: want LevelError and the zero Info")
	}
}

func TestAll(t *testing.T) {
	all := All()
	if len(all) == 0 || all[0].Code != QueueInvalidJob || all[len(all)-1].Code != MailerQueueRetainFailed {
		t.Fatalf("All() is not in the file's order: %v ... %v", all[0].Code, all[len(all)-1].Code)
	}
	seen := map[Code]bool{}
	for _, info := range all {
		if seen[info.Code] {
			t.Errorf("%s twice", info.Code)
		}
		seen[info.Code] = true
		if (info.Where == WhereFailure) != (info.State != "") {
			t.Errorf("%s: where %s, state %q", info.Code, info.Where, info.State)
		}
	}
	all[0].Code = "changed"
	if All()[0].Code != QueueInvalidJob {
		t.Error("All shares its slice")
	}
}
