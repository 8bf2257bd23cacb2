package spec

import (
	"strconv"

	"github.com/ql3/ql3/core/canonjson"
	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/scriptpath"
)

// Script runs a file of the scripts folder with the interpreter its
// extension names (core/scriptpath.Interpreters), from the file's folder —
// QingLong's `task FILE ARGS…`. File is relative to the scripts folder and
// obeys scriptpath.Clean exactly (already clean: "a/../b" or "./b" are
// refused, not repaired, so one script has one spelling and one digest).
// Whether an interpreter exists for the extension is the publishing
// binary's question (its table can be overridden), not the spec's.
type Script struct {
	File string   `json:"file"`
	Args []string `json:"args,omitempty"`
}

// validateProgram checks that exactly one of argv, shell and script is set
// and validates it.
func (c Command) validateProgram() error {
	var set []string
	for _, k := range []struct {
		name string
		on   bool
	}{{"argv", c.Argv != nil}, {"shell", c.Shell != nil}, {"script", c.Script != nil}} {
		if k.on {
			set = append(set, k.name)
		}
	}
	const rule = "exactly one of argv, shell and script is required"
	switch len(set) {
	case 0:
		return errs.Invalidf("argv", "%s, got neither", rule)
	case 2:
		return errs.Invalidf(set[1], "%s, got both %s and %s", rule, set[0], set[1])
	case 3:
		return errs.Invalidf("script", "%s, got all three", rule)
	}
	switch {
	case c.Argv != nil:
		return c.Argv.validate()
	case c.Shell != nil:
		return c.Shell.validate()
	default:
		return c.Script.validate()
	}
}

func (s *Script) validate() error {
	if s.File == "" {
		return errs.Invalidf("script.file", "is required")
	}
	clean, err := scriptpath.Clean("script.file", s.File, false)
	if err != nil {
		return err
	}
	if clean != s.File {
		return errs.Invalidf("script.file", "must be written as %q (no trailing '/')", clean)
	}
	if len(s.Args) > MaxEntries {
		return errs.TooLargef("script.args", "has %d elements, limit is %d", len(s.Args), MaxEntries)
	}
	for i, arg := range s.Args {
		if err := checkString("script.args["+strconv.Itoa(i)+"]", arg, ""); err != nil {
			return err
		}
	}
	return nil
}

func scanScript(s *canonjson.Scanner) *Script {
	sc := &Script{}
	if !s.Object() {
		return sc
	}
	for key, ok := s.Key(); ok; key, ok = s.Key() {
		switch key {
		case "file":
			sc.File = s.String()
		case "args":
			sc.Args = scanStrings(s)
		default:
			s.Fail()
		}
	}
	return sc
}
