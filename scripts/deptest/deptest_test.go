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
