package edge

import (
	"strconv"

	"github.com/ql3/ql3/core/canonjson"
	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/names"
	"github.com/ql3/ql3/core/spec"
)

// The edge's publication rules, in one place: the store calls these once
// per write, before its transaction, and the HTTP API and the CLI only
// parse (their errors come back from here, naming the field).

// MaxTaskName bounds a task name, in characters (not bytes), as on the
// cluster: names.MaxDisplayChars.
const MaxTaskName = names.MaxDisplayChars

// CheckTaskName validates a task name and returns it normalized (NFC: the
// form that is stored and compared): names.CheckDisplay, the rule of every
// user-visible name on both binaries, on field "name".
func CheckTaskName(name string) (string, error) {
	return names.CheckDisplay("name", name)
}

// CompiledSpec is a validated task spec with its canonical form and
// digest, ready to be stored as a revision.
type CompiledSpec struct {
	Spec      spec.Command
	Canonical []byte           // canonical JSON (core/spec)
	Digest    canonjson.Digest // SHA-256 of Canonical under spec.DigestDomain
}

// CompileSpec validates c (errors under "spec.") and computes its
// canonical form and digest.
func CompileSpec(c spec.Command) (CompiledSpec, error) {
	canonical, err := c.Canonical() // validates
	if err != nil {
		return CompiledSpec{}, errs.Prefix("spec", err)
	}
	return CompiledSpec{Spec: c, Canonical: canonical, Digest: canonjson.Sum(spec.DigestDomain, canonical)}, nil
}

// ValidTask is a NewTask that passed CheckNewTask: its name normalized,
// its spec compiled, its triggers normalized and free of duplicates.
type ValidTask struct {
	Name     string
	Spec     CompiledSpec
	Enabled  bool
	Labels   []string
	Triggers []TriggerInput
}

// CheckNewTask validates everything a CreateTask writes, so a bad trigger
// never leaves a task behind: the name, the spec, at most
// MaxTriggersPerTask triggers, each valid (errors under "triggers[i].")
// and no two with the same schedule (ScheduleKey: the task would run
// twice per instant).
func CheckNewTask(in NewTask) (ValidTask, error) {
	name, err := CheckTaskName(in.Name)
	if err != nil {
		return ValidTask{}, err
	}
	cs, err := CompileSpec(in.Spec)
	if err != nil {
		return ValidTask{}, err
	}
	labels, err := CheckLabels(in.Labels)
	if err != nil {
		return ValidTask{}, err
	}
	if len(in.Triggers) > MaxTriggersPerTask {
		return ValidTask{}, errs.TooLargef("triggers", "a task has at most %d triggers, got %d", MaxTriggersPerTask, len(in.Triggers))
	}
	triggers := make([]TriggerInput, len(in.Triggers))
	seen := make(map[string]int, len(in.Triggers))
	for i, t := range in.Triggers {
		if triggers[i], err = NormalizeTrigger(t); err != nil {
			return ValidTask{}, errs.Prefix("triggers["+strconv.Itoa(i)+"]", err)
		}
		key := ScheduleKey(triggers[i])
		if j, dup := seen[key]; dup {
			return ValidTask{}, errs.E(errs.Conflict, "triggers["+strconv.Itoa(i)+"].expression",
				"same expression and time zone as triggers[%d]: the task would run twice per instant", j)
		}
		seen[key] = i
	}
	return ValidTask{Name: name, Spec: cs, Enabled: in.Enabled, Labels: labels, Triggers: triggers}, nil
}

// CheckTaskUpdate validates an UpdateTask: the name (returned normalized)
// and the spec.
func CheckTaskUpdate(in TaskUpdate) (string, CompiledSpec, error) {
	name, err := CheckTaskName(in.Name)
	if err != nil {
		return "", CompiledSpec{}, err
	}
	cs, err := CompileSpec(in.Spec)
	return name, cs, err
}

// LookupName is the form a task name is looked up in: a reference that is
// a valid name is normalized like a stored one; anything else is looked up
// as given (and finds nothing).
func LookupName(ref string) string {
	if n, err := CheckTaskName(ref); err == nil {
		return n
	}
	return ref
}
