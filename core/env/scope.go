package env

import (
	"maps"
	"slices"

	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/spec"
)

// Compose is the environment a task's process gets from the store and
// from its own spec: the resolved store variables narrowed by the task's
// scope (every one, or only the names of env.use), merged with the inline
// environment. On a clash the store wins unless the task says
// env.inlineWins. The result (NAME=value\0 for each) must fit
// MaxProcessBytes; ql3's own QL3_* variables and the few inherited server
// variables come on top and are not counted.
//
// vars must be sorted by name (Resolve's order); the result is a fresh map.
func Compose(vars []Variable, scope *spec.EnvScope, inline map[string]string) (map[string]string, error) {
	out := make(map[string]string, len(vars)+len(inline))
	var allow map[string]bool
	if !scope.All() {
		allow = make(map[string]bool, len(scope.Use))
		for _, n := range scope.Use {
			allow[n] = true
		}
	}
	wins := scope.Wins()
	for k, v := range inline {
		out[k] = v
	}
	for _, v := range vars {
		if allow != nil && !allow[v.Name] {
			continue
		}
		if _, clash := inline[v.Name]; clash && wins {
			continue
		}
		out[v.Name] = v.Value
	}
	total := 0
	for _, k := range slices.Sorted(maps.Keys(out)) {
		total += len(k) + 1 + len(out[k]) + 1
	}
	if total > MaxProcessBytes {
		return nil, errs.Invalidf("env", "the process would get %d bytes of environment from the store and the task, limit is %d (1 MiB)", total, MaxProcessBytes)
	}
	return out, nil
}
