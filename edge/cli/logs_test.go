package cli

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/ql3/ql3/edge/httpapi"
)

// TestFollowDoesNotRepeatWhenAttemptEndsFirst: the attempt's log is
// complete while the Run is still finishing (not terminal yet); the follow
// loop must not print the attempt again from offset 0. (Issue #13: three
// lines came out six times.)
func TestFollowDoesNotRepeatWhenAttemptEndsFirst(t *testing.T) {
	const output = "one\ntwo\nthree\n"
	var runGets atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/api/v1/runs/run-1":
			r := httpapi.Run{ID: "run-1", Status: "running", AttemptCount: 1}
			// The Run ends only on the third look, after the attempt.
			if runGets.Add(1) >= 3 {
				r.Status = "succeeded"
			}
			w.Header().Set("Content-Type", "application/json")
			json.NewEncoder(w).Encode(r)
		case "/api/v1/runs/run-1/attempts/1/log":
			off, _ := strconv.Atoi(r.URL.Query().Get("offset"))
			if off > len(output) {
				off = len(output)
			}
			w.Header().Set("Trailer", "X-Log-Complete")
			w.Write([]byte(output[off:]))
			w.Header().Set("X-Log-Complete", "true")
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	tok, err := httpapi.NewAdminToken()
	if err != nil {
		t.Fatal(err)
	}
	env, out, errOut := testEnv(map[string]string{"QL3_TOKEN": tok})
	code := Run(context.Background(), []string{"logs", "--addr", srv.URL, "run-1", "-f"}, env)
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if out.String() != output {
		t.Fatalf("followed output %q, want %q once", out.String(), output)
	}
}

// TestRunNowPrintsStatusOnce: `run now` says "run <id>: queued", not
// "queued: queued"; a repeated idempotency key says so.
func TestRunNowPrintsStatusOnce(t *testing.T) {
	created := true
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/api/v1/tasks/hello/runs" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		c := created
		json.NewEncoder(w).Encode(httpapi.Run{ID: "run-1", Status: "queued", Created: &c})
	}))
	defer srv.Close()
	tok, err := httpapi.NewAdminToken()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		created bool
		want    string
	}{
		{true, "run run-1: queued\n"},
		{false, "run run-1 (already requested with this idempotency key): queued\n"},
	} {
		created = tc.created
		env, out, errOut := testEnv(map[string]string{"QL3_TOKEN": tok})
		if code := Run(context.Background(), []string{"run", "now", "--addr", srv.URL, "hello"}, env); code != ExitOK {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		if out.String() != tc.want {
			t.Errorf("created=%v: %q, want %q", tc.created, out.String(), tc.want)
		}
	}
}
