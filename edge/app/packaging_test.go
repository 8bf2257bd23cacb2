package app

import (
	"os"
	"regexp"
	"strconv"
	"testing"
	"time"
)

// TestServiceUnitsOutwaitTheDrain: the systemd unit and the procd script
// give ql3-edge longer than drain grace + kill grace before their own
// SIGKILL, so a restart never turns a drain into lost runs (ADR 0040).
func TestServiceUnitsOutwaitTheDrain(t *testing.T) {
	unit, err := os.ReadFile("../packaging/systemd/ql3-edge.service")
	if err != nil {
		t.Fatal(err)
	}
	drain := mustDuration(t, unit, `(?m)^ExecStart=.*--drain-grace (\S+)`)
	kill := mustDuration(t, unit, `(?m)^ExecStart=.*--kill-grace (\S+)`)
	stop := mustDuration(t, unit, `(?m)^TimeoutStopSec=(\d+)$`, "s")
	if stop <= drain+kill {
		t.Errorf("systemd: TimeoutStopSec %s does not exceed drain %s + kill grace %s", stop, drain, kill)
	}
	if drain != DefaultDrainGraceMs*time.Millisecond || kill != DefaultKillGraceMs*time.Millisecond {
		t.Errorf("systemd unit graces %s/%s differ from the defaults", drain, kill)
	}
	if !regexp.MustCompile(`(?m)^Delegate=yes$`).Match(unit) || !regexp.MustCompile(`(?m)^KillMode=mixed$`).Match(unit) {
		t.Error("systemd unit: want Delegate=yes (per-attempt cgroups) and KillMode=mixed (SIGTERM to ql3-edge only)")
	}

	script, err := os.ReadFile("../packaging/openwrt/ql3-edge.init")
	if err != nil {
		t.Fatal(err)
	}
	if d := mustDuration(t, script, `(?m)^DRAIN_GRACE_S=(\d+)$`, "s"); d != drain {
		t.Errorf("procd drain grace %s differs from the default %s", d, drain)
	}
	mustDuration(t, script, `(?m)^KILL_GRACE_S=(\d+)$`, "s")
	// term_timeout = drain grace + kill grace + a positive margin.
	if margin := mustDuration(t, script, `term_timeout \$\(\(DRAIN_GRACE_S \+ KILL_GRACE_S \+ (\d+)\)\)`, "s"); margin <= 0 {
		t.Errorf("procd: term_timeout has no margin above drain + kill grace")
	}
}

func mustDuration(t *testing.T, data []byte, expr string, unit ...string) time.Duration {
	t.Helper()
	m := regexp.MustCompile(expr).FindSubmatch(data)
	if m == nil {
		t.Fatalf("%s not found", expr)
	}
	s := string(m[1])
	if len(unit) > 0 {
		n, err := strconv.Atoi(s)
		if err != nil {
			t.Fatal(err)
		}
		return time.Duration(n) * time.Second
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		t.Fatal(err)
	}
	return d
}
