package qlimport

import (
	"bytes"
	"strings"
	"testing"
)

// TestWritePlan: rows that need attention always, lossless ones only with
// all; the counts and the notes after the table; never a value.
func TestWritePlan(t *testing.T) {
	p := Plan{Zone: "Asia/Shanghai",
		Tasks: []TaskPlan{{SourceID: 7, Class: RequiresManual, Name: "boot", Reasons: []string{"@boot is not a schedule"}},
			{SourceID: 1, Class: Lossless, Name: "sign", Kind: "script", Script: &ScriptCall{File: "jd_sign.js"}, Schedules: []string{"0 8 * * *"}, Enabled: true}},
		Envs:   []EnvPlan{{SourceID: 3, Class: Lossless, Name: "JD_COOKIE", Enabled: true, ValueBytes: 12}},
		Counts: map[string]map[Class]int{"tasks": {RequiresManual: 1, Lossless: 1}, "envs": {Lossless: 1}},
		Notes:  []string{"Asia/Shanghai has no daylight saving time"}}
	for _, tc := range []struct {
		all       bool
		want, not []string
	}{
		{false, []string{"KIND", "task", "boot", "@boot is not a schedule", "tasks:", "1 lossless, 1 requires_manual_action", "note: Asia/Shanghai"}, []string{"jd_sign.js", "JD_COOKIE"}},
		{true, []string{"script jd_sign.js @ 0 8 * * *", "entry #1 of JD_COOKIE, 12 bytes"}, nil},
	} {
		var b bytes.Buffer
		WritePlan(&b, p, tc.all)
		out := b.String()
		for _, w := range tc.want {
			if !strings.Contains(out, w) {
				t.Errorf("all=%v: %q missing from\n%s", tc.all, w, out)
			}
		}
		for _, n := range tc.not {
			if strings.Contains(out, n) {
				t.Errorf("all=%v: %q in\n%s", tc.all, n, out)
			}
		}
	}
}
