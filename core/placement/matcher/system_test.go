package matcher

import (
	"testing"

	"github.com/ql3/ql3/core/placement"
)

// TestSystemExecutorTakesOnlyItsRuns: a session advertising a system
// executor matches only requirements that name one; an ordinary worker
// never matches those.
func TestSystemExecutorTakesOnlyItsRuns(t *testing.T) {
	system := placement.Capabilities{OS: "linux", Arch: "amd64", Executors: []string{placement.SubscriptionExecutor}}
	worker := placement.Capabilities{OS: "linux", Arch: "amd64", Executors: []string{"argv", "shell", "script"}}
	pull := placement.Requirements{Required: placement.Required{Executors: []string{placement.SubscriptionExecutor}}}
	ordinary := placement.Requirements{Required: placement.Required{OS: "linux"}}
	for _, c := range []struct {
		name string
		caps placement.Capabilities
		req  placement.Requirements
		ok   bool
	}{
		{"system takes a pull", system, pull, true},
		{"system refuses an ordinary run", system, ordinary, false},
		{"worker refuses a pull", worker, pull, false},
		{"worker takes an ordinary run", worker, ordinary, true},
	} {
		m, err := Compile(c.req)
		if err != nil {
			t.Fatal(err)
		}
		p, err := Prepare(c.caps)
		if err != nil {
			t.Fatal(err)
		}
		if got := m.MatchPrepared(p); got.OK != c.ok || (!c.ok && got.Category != CategoryExecutor) {
			t.Errorf("%s: %+v", c.name, got)
		}
		if p.System() != c.caps.System() {
			t.Errorf("%s: Prepared.System disagrees", c.name)
		}
	}
}
