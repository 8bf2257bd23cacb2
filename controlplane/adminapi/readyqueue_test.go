package adminapi_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http/httptest"
	"testing"

	"github.com/ql3/ql3/controlplane"
	"github.com/ql3/ql3/controlplane/adminapi"
)

// TestReadyzQueueDetail: /readyz carries the queue's overload verdict
// (ADR 0066) and stays ready when the queue is overloaded; without a
// detail (unreadable, or not wired) the body has none.
func TestReadyzQueueDetail(t *testing.T) {
	t.Parallel()
	overloaded := controlplane.QueueReport{Depth: 812, OldestAgeMs: 95_000}.Health(0)
	for _, c := range []struct {
		name  string
		queue func(context.Context) *controlplane.QueueHealth
		want  *controlplane.QueueHealth
	}{
		{"overloaded", func(context.Context) *controlplane.QueueHealth { return &overloaded }, &overloaded},
		{"unreadable", func(context.Context) *controlplane.QueueHealth { return nil }, nil},
		{"not wired", nil, nil},
	} {
		api := adminapi.New(adminapi.Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Version: "t",
			Ready: func(context.Context) error { return nil }, Queue: c.queue})
		rec := httptest.NewRecorder()
		api.ServeHTTP(rec, httptest.NewRequest("GET", "/readyz", nil))
		var h adminapi.Health
		if err := json.Unmarshal(rec.Body.Bytes(), &h); err != nil || rec.Code != 200 || h.Status != "ok" {
			t.Fatalf("%s: /readyz %d %s (%v), want 200 ok", c.name, rec.Code, rec.Body, err)
		}
		switch {
		case c.want == nil && h.Queue != nil:
			t.Errorf("%s: queue detail %+v, want none", c.name, *h.Queue)
		case c.want != nil && (h.Queue == nil || *h.Queue != *c.want):
			t.Errorf("%s: queue detail %+v, want %+v", c.name, h.Queue, *c.want)
		}
	}
	if !overloaded.Overloaded || overloaded.ThresholdMs != controlplane.DefaultOverloadQueueAgeMs {
		t.Fatalf("95 s oldest against the default threshold: %+v, want overloaded", overloaded)
	}
}
