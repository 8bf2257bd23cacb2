package deptest

import (
	"reflect"
	"testing"
)

func TestViolations(t *testing.T) {
	deps := []string{"fmt", "net", "net/http", "github.com/jackc/pgx/v5", "github.com/jackc/puddle/v2", "netip"}
	cases := []struct {
		banned []string
		want   []string
	}{
		{[]string{"net"}, []string{"net"}},
		{[]string{"net/http"}, []string{"net/http"}},
		{[]string{"github.com/jackc/"}, []string{"github.com/jackc/pgx/v5", "github.com/jackc/puddle/v2"}},
		{[]string{"database/sql", "os/exec"}, nil},
	}
	for _, c := range cases {
		if got := Violations(deps, c.banned); !reflect.DeepEqual(got, c.want) {
			t.Errorf("Violations(%v) = %v, want %v", c.banned, got, c.want)
		}
	}
}

// TestDepsSeesTransitiveImports proves the lister is not vacuous: net/http
// really links net, so a ban on net would fire for it.
func TestDepsSeesTransitiveImports(t *testing.T) {
	deps := Deps(t, ".", "net/http", Target{GOOS: "linux", GOARCH: "mipsle", GOMIPS: "softfloat"})
	if bad := Violations(deps, []string{"net"}); len(bad) != 1 {
		t.Fatalf("expected net among the deps of net/http, got %v", bad)
	}
}

// TestNonStandardSkipsTheStandardLibrary: net/http links only the standard
// library; this package links itself and nothing else outside it.
func TestNonStandardSkipsTheStandardLibrary(t *testing.T) {
	if got := NonStandard(t, ".", "net/http", Target{GOOS: "linux", GOARCH: "amd64"}); len(got) != 0 {
		t.Fatalf("NonStandard(net/http) = %v, want none", got)
	}
	if got := NonStandard(t, ".", ".", Target{GOOS: "linux", GOARCH: "amd64"}); !reflect.DeepEqual(got, []string{"github.com/ql3/ql3/scripts/deptest"}) {
		t.Fatalf("NonStandard(deptest) = %v", got)
	}
}
