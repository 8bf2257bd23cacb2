//go:build linux

package integration

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ql3/ql3/edge/httpapi"
)

// TestReadyzReportsContainment: /readyz names the containment in force;
// where a cgroup file system is mounted (CI: the v1/v2 hybrid) it is a
// per-attempt cgroup, and the start log says the same.
func TestReadyzReportsContainment(t *testing.T) {
	p := startBinary(t, filepath.Join(t.TempDir(), "data"))
	resp, err := http.Get(p.base + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	var h httpapi.Health
	err = json.NewDecoder(resp.Body).Decode(&h)
	resp.Body.Close()
	if err != nil || h.Status != "ok" || h.Containment == "" {
		t.Fatalf("/readyz: %+v, %v", h, err)
	}
	mi, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(mi), " - cgroup") && !strings.HasPrefix(h.Containment, "per-attempt cgroup") {
		t.Errorf("a cgroup is mounted here but /readyz says %q", h.Containment)
	}
	if !strings.Contains(p.stderr.String(), "attempt containment") {
		t.Error("the start log does not name the containment")
	}
}
