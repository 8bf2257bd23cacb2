package notify

import (
	"strings"
	"testing"
)

func TestRetryDelayMs(t *testing.T) {
	for _, tc := range []struct {
		n      int
		jitter float64
		want   int64
	}{
		{1, 0, 1000}, {1, 0.999999, 1999}, {2, 0, 2000}, {3, 0, 4000},
		{20, 0, 300_000}, {0, 0, 1000}, {2, 5, 2000},
	} {
		if got := RetryDelayMs(tc.n, 2000, 600_000, tc.jitter); got != tc.want {
			t.Errorf("RetryDelayMs(%d, jitter %v) = %d, want %d", tc.n, tc.jitter, got, tc.want)
		}
	}
}

func TestCompose(t *testing.T) {
	code := 3
	title, content := Compose(Outcome{Kind: KindFailed, TaskName: "checkin", RunID: "r1", Attempt: 2, ExitCode: &code, ErrorClass: "process_exit"})
	if title != "ql3: checkin failed" {
		t.Fatalf("title %q", title)
	}
	for _, want := range []string{"run: r1", "attempt: 2", "exit code: 3", "error: process_exit"} {
		if !strings.Contains(content, want) {
			t.Errorf("content %q lacks %q", content, want)
		}
	}
	if tt, _ := Compose(Outcome{Kind: KindTimedOut, TaskName: strings.Repeat("界", 200)}); len(tt) > 200 || !strings.HasSuffix(tt, "界") {
		t.Errorf("title not cut on a rune boundary: %d bytes", len(tt))
	}
	if tt, c := Summary("t", 7, 60000); !strings.Contains(tt, "7 more") || !strings.Contains(c, "1 min") {
		t.Errorf("summary %q %q", tt, c)
	}
	if tt, c := Digest([]string{"a", "b"}); !strings.Contains(tt, "2 notification") || c != "- a\n- b" {
		t.Errorf("digest %q %q", tt, c)
	}
}

func TestScriptIdempotencyKey(t *testing.T) {
	if ScriptIdempotencyKey("r", "c", "run", 2) == ScriptIdempotencyKey("r", "c", "run", 3) {
		t.Fatal("keys of two calls must differ")
	}
}
