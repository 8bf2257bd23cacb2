package importstore_test

import (
	"context"
	"encoding/json"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/ql3/ql3/controlplane/importer"
	"github.com/ql3/ql3/core/cron"
)

// TestImportedTasksFireAsQingLong: after apply, the schedules the cluster's
// scheduler reads (each trigger_schedules row's revision, enabled, of an
// enabled live task) are exactly the adopted schedules of the enabled
// QingLong tasks, each in the legacy zone, and each fires at the 20
// instants QingLong's own scheduler computed for it (the golden file of
// core/qlimport, recorded from node-schedule/cron-parser) by core/cron,
// which the coordinator evaluates them with.
func TestImportedTasksFireAsQingLong(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	from := copyTree(t, fixture)
	c := newCluster(t)
	p, _, err := importer.Inspect(ctx, from, zone)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.im.Apply(ctx, c.project, from, zone, p.Digest); err != nil {
		t.Fatal(err)
	}
	var golden struct {
		Zone  string              `json:"zone"`
		Start time.Time           `json:"start"`
		Fires map[string][]string `json:"fires"`
	}
	b, err := os.ReadFile("../../../core/qlimport/testdata/fires-Asia_Shanghai.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &golden); err != nil || golden.Zone != zone {
		t.Fatalf("golden: %v zone %q", err, golden.Zone)
	}
	rows, err := c.admin.Query(ctx, `SELECT r.expression, r.time_zone FROM ql3.trigger_schedules s
		JOIN ql3.trigger_revisions r ON r.trigger_id = s.trigger_id AND r.revision = s.trigger_revision
		JOIN ql3.tasks t ON t.task_id = r.task_id
		WHERE s.project_id = $1 AND r.enabled AND t.enabled AND t.deleted_at_ms IS NULL`, c.project)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var got, want []string
	for rows.Next() {
		var expr, tz string
		if err := rows.Scan(&expr, &tz); err != nil {
			t.Fatal(err)
		}
		got = append(got, expr)
		if tz != zone {
			t.Errorf("trigger %s: zone %s", expr, tz)
		}
		loc, err := time.LoadLocation(tz)
		if err != nil {
			t.Fatal(err)
		}
		s, err := cron.Parse(expr, loc)
		if err != nil {
			t.Fatal(err)
		}
		ql, ok := golden.Fires[expr]
		if !ok {
			t.Fatalf("%q has no QingLong fire times: add it to core/qlimport/testdata/fires-exprs.txt and record them", expr)
		}
		at := golden.Start
		for i, w := range ql {
			if at, err = s.Next(at); err != nil {
				t.Fatal(err)
			}
			if g := at.UTC().Format("2006-01-02T15:04:05.000Z"); g != w {
				t.Errorf("%q fire %d: ql3 %s, QingLong %s", expr, i, g, w)
				break
			}
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	for _, tp := range p.Tasks {
		if tp.Created() && tp.Enabled {
			want = append(want, tp.Schedules...)
		}
	}
	for _, sp := range p.Subscriptions { // a subscription's pulls fire on its schedule, as QingLong's do
		if sp.Created() && sp.Enabled && sp.Schedule != "" {
			want = append(want, sp.Schedule)
		}
	}
	sort.Strings(got)
	sort.Strings(want)
	if strings.Join(got, "|") != strings.Join(want, "|") || len(got) < 10 {
		t.Fatalf("scheduled %q\nwant      %q", got, want)
	}
}
