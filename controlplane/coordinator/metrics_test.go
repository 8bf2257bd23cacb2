package coordinator

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
)

// TestCountersAreNamedOnce: every counter has a distinct name and label
// set, and reads the field it names.
func TestCountersAreNamedOnce(t *testing.T) {
	m := newMetrics()
	m.Raced.Add(3)
	m.TakenOver.Add(2)
	seen := map[string]bool{}
	for _, c := range m.Counters() {
		key := c.Name
		for _, l := range c.Labels {
			key += "," + l[0] + "=" + l[1]
		}
		if seen[key] || !strings.HasPrefix(c.Name, "ql3_scheduler_") || !strings.HasSuffix(c.Name, "_total") || c.Help == "" {
			t.Fatalf("counter %+v duplicated or badly named", c)
		}
		seen[key] = true
	}
	if !seen["ql3_scheduler_admissions_refused_total,reason=raced"] || !seen["ql3_scheduler_takeovers_total"] {
		t.Fatalf("counters %v", seen)
	}
	if s := m.Summary(); !strings.Contains(s, " admissions_refused_raced=3 ") || !strings.Contains(s, " takeovers=2 ") {
		t.Fatalf("summary %q", s)
	}
}

// TestSlogSinkLogsExpectedRefusalsAtDebug: raced and stale refusals are
// expected under contention; they are logged at debug, the rest at warn.
func TestSlogSinkLogsExpectedRefusalsAtDebug(t *testing.T) {
	for _, level := range []slog.Level{slog.LevelDebug, slog.LevelInfo} {
		var buf bytes.Buffer
		sink := SlogSink(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: level})))
		sink(Diagnostic{Kind: "admission_refused_raced", TriggerID: "t1", Debug: true})
		sink(Diagnostic{Kind: "admission_refused_corrupt", TriggerID: "t2"})
		out := buf.String()
		if !strings.Contains(out, "level=WARN") || !strings.Contains(out, "admission_refused_corrupt") {
			t.Fatalf("%v: corrupt refusal not at warn: %q", level, out)
		}
		if raced := strings.Contains(out, "level=DEBUG") && strings.Contains(out, "admission_refused_raced"); raced != (level == slog.LevelDebug) {
			t.Fatalf("%v: raced refusal logged=%v: %q", level, raced, out)
		}
	}
}
