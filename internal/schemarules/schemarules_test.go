package schemarules

import (
	"testing"
	"time"
)

func TestCompareInstants(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want int
		ok   bool
	}{
		{"2026-11-30T12:00:00Z", "2026-11-30T12:00:00Z", 0, true},
		{"2026-11-30T12:00:00Z", "2026-11-30T12:00:01Z", -1, true},
		{"2026-12-01T12:00:00+02:00", "2026-12-01T10:00:00Z", 0, true},
		{"2026-12-01T12:00:00+02:00", "2026-12-01T10:00:00.000000000001Z", -1, true},
		{"2026-12-01T10:00:00.1000z", "2026-12-01t10:00:00.1Z", 0, true},
		{"2026-12-01T00:30:00+01:00", "2026-11-30T23:29:59.9Z", 1, true},
		{"2026-12-31T23:59:60Z", "2027-01-01T00:00:00Z", 0, true},
		{"2024-02-29T00:00:00Z", "2024-03-01T00:00:00-00:01", -1, true},
		{"0001-01-01T00:00:00Z", "9999-12-31T23:59:59Z", -1, true},
		{"0000-01-01T00:00:00Z", "0000-03-01T00:00:00Z", -1, true},
		{"2025-02-29T00:00:00Z", "2025-03-01T00:00:00Z", 0, false},
		{"2026-11-30 12:00:00Z", "2026-11-30T12:00:00Z", 0, false},
		{"2026-11-30T12:00:00+0200", "2026-11-30T12:00:00Z", 0, false},
		{"2026-11-30T12:00:00.Z", "2026-11-30T12:00:00Z", 0, false},
		{"tomorrow", "2026-11-30T12:00:00Z", 0, false},
	} {
		got, ok := CompareInstants(tc.a, tc.b)
		if got != tc.want || ok != tc.ok {
			t.Errorf("CompareInstants(%q, %q) = %d, %t; want %d, %t", tc.a, tc.b, got, ok, tc.want, tc.ok)
		}
		if ok {
			if back, _ := CompareInstants(tc.b, tc.a); back != -got {
				t.Errorf("CompareInstants(%q, %q) = %d, not the opposite of %d", tc.b, tc.a, back, got)
			}
		}
	}
}

// TestCompareInstantsIsTime checks the count of seconds against package
// time on instants without leap seconds.
func TestCompareInstantsIsTime(t *testing.T) {
	base := time.Date(1, 1, 2, 0, 0, 0, 0, time.UTC).Unix()
	for i := int64(0); i < 4000; i++ {
		a := time.Unix(base+i*i*19001+i*7919, 0).UTC()
		b := a.Add(time.Duration(i%3-1) * time.Second)
		for _, zone := range []*time.Location{time.UTC, time.FixedZone("", -(9*3600 + 30*60)), time.FixedZone("", 14*3600)} {
			sa, sb := a.In(zone).Format(time.RFC3339), b.Format(time.RFC3339)
			got, ok := CompareInstants(sa, sb)
			if !ok || got != a.Compare(b) {
				t.Fatalf("CompareInstants(%q, %q) = %d, %t; want %d", sa, sb, got, ok, a.Compare(b))
			}
		}
	}
}

func FuzzCompareInstants(f *testing.F) {
	f.Add("2026-11-30T12:00:00Z", "2026-11-30T12:00:00.5+01:00")
	f.Fuzz(func(t *testing.T, a, b string) {
		x, ok := CompareInstants(a, b)
		y, ok2 := CompareInstants(b, a)
		if ok != ok2 || x != -y {
			t.Fatalf("not antisymmetric: %d %t, %d %t", x, ok, y, ok2)
		}
		ta, err1 := time.Parse(time.RFC3339Nano, a)
		tb, err2 := time.Parse(time.RFC3339Nano, b)
		if ok && err1 == nil && err2 == nil && len(a) <= 30 && len(b) <= 30 && ta.Year() > 0 && tb.Year() > 0 {
			if want := ta.Compare(tb); want != x {
				t.Fatalf("CompareInstants(%q, %q) = %d; time says %d", a, b, x, want)
			}
		}
	})
}

func TestCountItems(t *testing.T) {
	obj := map[string]any{"to": []any{1, 2}, "cc": []any{3}, "bcc": "x"}
	if n := CountItems(obj, "to", "cc", "bcc", "none"); n != 3 {
		t.Errorf("CountItems = %d, want 3", n)
	}
}
