package panel

import (
	"testing"
	"time"
	_ "time/tzdata"

	"github.com/ql3/ql3/core/errs"
)

func TestPreviewMarksDSTChanges(t *testing.T) {
	ms := func(s string) int64 {
		tm, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		return tm.UnixMilli()
	}
	cases := []struct {
		name, expr, zone, after string
		count                   int
		want                    []string // local time + " " + mark
	}{
		{"wall-clock over spring-forward", "30 2 * * *", "America/New_York", "2026-03-07T00:00:00Z", 3,
			[]string{"2026-03-07T02:30:00-05:00 ", "2026-03-08T03:00:00-04:00 gap", "2026-03-09T02:30:00-04:00 "}},
		{"wall-clock over fall-back fires once", "30 1 * * *", "America/New_York", "2026-10-31T12:00:00Z", 3,
			[]string{"2026-11-01T01:30:00-04:00 repeat", "2026-11-02T01:30:00-05:00 ", "2026-11-03T01:30:00-05:00 "}},
		{"cadence over fall-back fires twice", "30 * * * *", "Europe/Berlin", "2026-10-25T00:00:00Z", 3,
			[]string{"2026-10-25T02:30:00+02:00 repeat", "2026-10-25T02:30:00+01:00 repeat", "2026-10-25T03:30:00+01:00 "}},
		{"natural 03:00 after the gap is no gap", "0 3 * * *", "America/New_York", "2026-03-07T12:00:00Z", 1,
			[]string{"2026-03-08T03:00:00-04:00 "}},
		{"UTC", "@daily", "", "2026-01-01T00:00:00Z", 2,
			[]string{"2026-01-02T00:00:00Z ", "2026-01-03T00:00:00Z "}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res, err := Preview(c.expr, c.zone, ms(c.after), c.count)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Fires) != len(c.want) {
				t.Fatalf("%d fires, want %d", len(res.Fires), len(c.want))
			}
			for i, f := range res.Fires {
				if got := f.Local + " " + f.Mark; got != c.want[i] {
					t.Errorf("fire %d = %q, want %q (%s)", i, got, c.want[i], f.Note)
				}
			}
		})
	}
}

func TestPreviewErrorsNameTheField(t *testing.T) {
	for _, c := range []struct{ expr, zone, field string }{
		{"61 * * * *", "UTC", "expression"},
		{"", "UTC", "expression"},
		{"@every 5m", "UTC", "expression"},
		{"* * * * *", "Mars/Olympus", "timeZone"},
		{"* * * * *", "Local", "timeZone"},
	} {
		_, err := Preview(c.expr, c.zone, 0, 5)
		if errs.Code(err) != errs.Invalid || errs.Field(err) != c.field {
			t.Errorf("Preview(%q, %q) = %v, want invalid %s", c.expr, c.zone, err, c.field)
		}
	}
}

// FuzzPreview: any input is either refused naming one of the preview's
// fields or answers at most count fires, strictly increasing, after
// afterMs, each with a mark only from the documented set.
func FuzzPreview(f *testing.F) {
	f.Add("30 2 * * *", "America/New_York", int64(1_772_928_000_000), 10)
	f.Add("*/15 * * * *", "Europe/Berlin", int64(1_792_540_800_000), 20)
	f.Add("0 0 29 2 *", "UTC", int64(0), 3)
	f.Add("@hourly", "Australia/Lord_Howe", int64(1_775_300_000_000), 5)
	f.Fuzz(func(t *testing.T, expr, zone string, afterMs int64, count int) {
		if count < 1 || count > MaxPreviewCount {
			count = 1 + ((count%MaxPreviewCount)+MaxPreviewCount)%MaxPreviewCount
		}
		res, err := Preview(expr, zone, afterMs, count)
		if err != nil {
			switch errs.Field(err) {
			case "expression", "timeZone", "after":
			default:
				t.Fatalf("Preview(%q, %q, %d) error names field %q: %v", expr, zone, afterMs, errs.Field(err), err)
			}
			return
		}
		if len(res.Fires) == 0 || len(res.Fires) > count {
			t.Fatalf("%d fires for count %d", len(res.Fires), count)
		}
		prev := afterMs
		for i, fire := range res.Fires {
			if fire.AtMs <= prev {
				t.Fatalf("fire %d at %d not after %d", i, fire.AtMs, prev)
			}
			if fire.Mark != "" && fire.Mark != "gap" && fire.Mark != "repeat" {
				t.Fatalf("fire %d mark %q", i, fire.Mark)
			}
			prev = fire.AtMs
		}
	})
}
