package sqlite

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/ql3/ql3/core/spec"
	"github.com/ql3/ql3/edge"
	"github.com/ql3/ql3/worker/clock"
)

// t0 is a fixed, second-aligned start time for fake clocks.
var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func openTest(t testing.TB, clk clock.Clock) *Store {
	t.Helper()
	return openAt(t, filepath.Join(t.TempDir(), "edge.db"), clk)
}

func openAt(t testing.TB, path string, clk clock.Clock) *Store {
	t.Helper()
	s, err := Open(context.Background(), path, Options{Clock: clk})
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func shellSpec(cmd string) spec.Command {
	return spec.Command{Kind: spec.KindCommandV1, Shell: &spec.Shell{Command: cmd}}.WithDefaults()
}

func mustTask(t testing.TB, s *Store, name string, sp spec.Command) edge.Task {
	t.Helper()
	task, err := s.CreateTask(context.Background(), edge.NewTask{Name: name, Spec: sp, Enabled: true})
	if err != nil {
		t.Fatalf("create task: %v", err)
	}
	return task
}

func mustRun(t testing.TB, s *Store, taskID, key string) edge.Run {
	t.Helper()
	r, _, err := s.CreateManualRun(context.Background(), edge.ManualRun{TaskID: taskID, IdempotencyKey: key})
	if err != nil {
		t.Fatalf("run now: %v", err)
	}
	return r
}

func eventTypes(t testing.TB, s *Store, runID string) []string {
	t.Helper()
	evs, err := s.ListRunEvents(context.Background(), runID, 0, edge.MaxPageSize)
	if err != nil {
		t.Fatalf("events: %v", err)
	}
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = string(e.Type)
	}
	return out
}

func withKind(c spec.Command, kind string) spec.Command {
	c.Kind = kind
	return c
}
