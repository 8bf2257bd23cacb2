package importer

import (
	"context"
	"encoding/json"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/ql3/ql3/core/cron"
	"github.com/ql3/ql3/edge"
)

// TestImportedTasksFireAsQingLong: after apply, the schedules the
// scheduler reads (DueSchedules: enabled triggers of enabled tasks) are
// exactly the adopted schedules of the enabled QingLong tasks, and each
// fires at the 20 instants QingLong's own scheduler computed for it in
// the legacy zone (golden file of core/qlimport, recorded from
// node-schedule/cron-parser).
func TestImportedTasksFireAsQingLong(t *testing.T) {
	ctx := context.Background()
	from := copyTree(t, fixture)
	e := openEdge(t, t.TempDir())
	p, _, err := Inspect(ctx, from, zone)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.im.Apply(ctx, from, zone, p.Digest, "test"); err != nil {
		t.Fatal(err)
	}
	var golden struct {
		Zone  string              `json:"zone"`
		Start time.Time           `json:"start"`
		Fires map[string][]string `json:"fires"`
	}
	b, err := os.ReadFile("../../core/qlimport/testdata/fires-Asia_Shanghai.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &golden); err != nil || golden.Zone != zone {
		t.Fatalf("golden: %v zone %q", err, golden.Zone)
	}

	due, err := e.store.DueSchedules(ctx, t0.UnixMilli(), 256)
	if err != nil {
		t.Fatal(err)
	}
	var got, want []string
	for _, it := range due {
		got = append(got, it.Trigger.Expression)
		if it.Trigger.TimeZone != zone || !it.Trigger.Enabled {
			t.Errorf("trigger %s: zone %s enabled %v", it.Trigger.Expression, it.Trigger.TimeZone, it.Trigger.Enabled)
		}
		loc, err := edge.LoadZone(it.Trigger.TimeZone)
		if err != nil {
			t.Fatal(err)
		}
		s, err := cron.Parse(it.Trigger.Expression, loc)
		if err != nil {
			t.Fatal(err)
		}
		ql, ok := golden.Fires[it.Trigger.Expression]
		if !ok {
			t.Fatalf("%q has no QingLong fire times: add it to core/qlimport/testdata/fires-exprs.txt and record them", it.Trigger.Expression)
		}
		at := golden.Start
		for i, w := range ql {
			if at, err = s.Next(at); err != nil {
				t.Fatal(err)
			}
			if g := at.UTC().Format("2006-01-02T15:04:05.000Z"); g != w {
				t.Errorf("%q fire %d: ql3 %s, QingLong %s", it.Trigger.Expression, i, g, w)
				break
			}
		}
	}
	for _, tp := range p.Tasks {
		if tp.Created() && tp.Enabled {
			want = append(want, tp.Schedules...)
		}
	}
	sort.Strings(got)
	sort.Strings(want)
	if strings.Join(got, "|") != strings.Join(want, "|") || len(got) < 10 {
		t.Fatalf("scheduled %q\nwant      %q", got, want)
	}
}
