package scriptpath

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/ql3/ql3/core/errs"
)

// TaskCommand is a QingLong `task` command line:
//
//	task [-l] [-m SECONDS] FILE [now | conc ENV [N…] | desi ENV N… | ARGS…]
//
// `now` runs at once without the random delay; `conc` runs the script once
// per account (the `&`-separated parts of ENV), concurrently; `desi` runs
// it for the named accounts only. ql3 maps `now` and plain arguments to a
// script task; `conc`/`desi` need per-account fan-out and are reported so
// an import can classify them.
type TaskCommand struct {
	File       string
	Args       []string
	MaxTimeSec int    // -m: the command's own timeout, 0 when not given
	Mode       string // "", "now", "conc" or "desi"
	ModeEnv    string // conc/desi: the env name whose parts are accounts
	Accounts   []int  // conc/desi: 1-based account numbers, empty = all
}

// shellMeta are characters that make a command line more than one plain
// program call; such a line is not read as a task command.
const shellMeta = ";|&$`<>(){}*?[]~!#\n\r"

// ParseTaskCommand reads cmd as a `task` invocation. ok is false (and err
// nil) when cmd is something else: another program, or a line that needs a
// shell (pipes, substitutions, redirections, globs, several commands). err
// is set when cmd is a task invocation that is malformed.
func ParseTaskCommand(cmd string) (tc TaskCommand, ok bool, err error) {
	words, plain := splitWords(cmd)
	if !plain || len(words) == 0 || (words[0] != "task" && words[0] != "ql3-task") {
		return TaskCommand{}, false, nil
	}
	tc, err = ParseTaskArgs(words[1:])
	return tc, true, err
}

// ParseTaskArgs reads the arguments of a `task` invocation (what follows
// the program name), as the `task` helper on a process's PATH receives
// them from its shell.
func ParseTaskArgs(w []string) (tc TaskCommand, err error) {
	for len(w) > 0 && strings.HasPrefix(w[0], "-") {
		switch w[0] {
		case "-l":
			w = w[1:]
		case "-m":
			if len(w) < 2 {
				return TaskCommand{}, errs.Invalidf("command", "task -m needs a number of seconds")
			}
			n, convErr := strconv.Atoi(w[1])
			if convErr != nil || n < 1 || n > 7*24*3600 {
				return TaskCommand{}, errs.Invalidf("command", "task -m must be 1..604800 seconds, got %q", w[1])
			}
			tc.MaxTimeSec = n
			w = w[2:]
		default:
			return TaskCommand{}, errs.Invalidf("command", "task: unknown option %q (known: -l, -m SECONDS)", w[0])
		}
	}
	if len(w) == 0 {
		return TaskCommand{}, errs.Invalidf("command", "task needs a script file")
	}
	file, cleanErr := Clean("command", strings.TrimPrefix(w[0], "./"), false)
	if cleanErr != nil {
		return TaskCommand{}, cleanErr
	}
	tc.File = file
	rest := w[1:]
	if len(rest) > 0 {
		switch rest[0] {
		case "now":
			tc.Mode, rest = "now", rest[1:]
		case "conc", "desi":
			tc.Mode = rest[0]
			if len(rest) < 2 {
				return TaskCommand{}, errs.Invalidf("command", "task %s needs an env name", rest[0])
			}
			tc.ModeEnv = rest[1]
			for _, a := range rest[2:] {
				for _, part := range strings.Split(a, ",") {
					nums, rangeErr := accountRange(part)
					if rangeErr != nil {
						return TaskCommand{}, errs.Invalidf("command", "task %s: %v", tc.Mode, rangeErr)
					}
					if len(tc.Accounts)+len(nums) > maxAccounts {
						return TaskCommand{}, errs.TooLargef("command", "task %s names more than %d accounts", tc.Mode, maxAccounts)
					}
					tc.Accounts = append(tc.Accounts, nums...)
				}
			}
			if tc.Mode == "desi" && len(tc.Accounts) == 0 {
				return TaskCommand{}, errs.Invalidf("command", "task desi needs account numbers")
			}
			return tc, nil
		}
	}
	tc.Args = rest
	return tc, nil
}

// maxAccounts bounds the accounts one conc/desi command may name.
const maxAccounts = 1000

// accountRange reads "N" or "A-B" (1-based account numbers, QingLong's
// desi/conc syntax).
func accountRange(s string) ([]int, error) {
	lo, hi, isRange := strings.Cut(s, "-")
	a, errA := strconv.Atoi(lo)
	b := a
	var errB error
	if isRange {
		b, errB = strconv.Atoi(hi)
	}
	if errA != nil || errB != nil || a < 1 || b < a || b > 10000 {
		return nil, fmt.Errorf("account numbers must be N or A-B within 1..10000, got %q", s)
	}
	if b-a+1 > maxAccounts {
		return nil, fmt.Errorf("account range %q is longer than %d", s, maxAccounts)
	}
	out := make([]int, 0, b-a+1)
	for n := a; n <= b; n++ {
		out = append(out, n)
	}
	return out, nil
}

// splitWords splits a command line on blanks with single and double
// quotes (no escapes inside single quotes, \" and \\ inside double ones).
// plain is false when the line needs a shell.
func splitWords(s string) (words []string, plain bool) {
	var cur strings.Builder
	inWord := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == ' ' || c == '\t':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		case c == '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return nil, false
			}
			cur.WriteString(s[i+1 : i+1+j])
			i += j + 1
			inWord = true
		case c == '"':
			i++
			for ; i < len(s) && s[i] != '"'; i++ {
				switch {
				case s[i] == '\\' && i+1 < len(s) && (s[i+1] == '"' || s[i+1] == '\\'):
					i++
					cur.WriteByte(s[i])
				case s[i] == '$' || s[i] == '`':
					return nil, false // expansion inside double quotes needs a shell
				default:
					cur.WriteByte(s[i])
				}
			}
			if i >= len(s) {
				return nil, false
			}
			inWord = true
		case c == '\\' || strings.IndexByte(shellMeta, c) >= 0:
			return nil, false
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words, true
}
