package spec

import (
	"github.com/ql3/ql3/core/canonjson"
	"github.com/ql3/ql3/core/placement"
)

// The fast path: a spec object read with canonjson.Scanner into the same
// wire value encoding/json would build, then the shared defaults,
// normalization and validation (wire.command). It covers every spec a
// sender encodes; anything outside it (null, unknown keys, floats, escaped
// keys …) makes Scanner report canonjson.ErrNotFast and Decode falls back
// to the reference strict decoder, which decides and names the field.
// FuzzDecodeFastPath holds the two to the same answers.

// Scan reads a spec object at s's position on the fast path and returns
// it as Decode would, with its digest. Any error — the scanner leaving its
// fast path or the spec failing validation — means the caller should decode
// the enclosing document with its reference decoder for the verdict.
func Scan(s *canonjson.Scanner) (Command, canonjson.Digest, error) {
	w := scanWire(s)
	if s.Failed() {
		return Command{}, canonjson.Digest{}, canonjson.ErrNotFast
	}
	c, canon, err := w.command()
	if err != nil {
		return Command{}, canonjson.Digest{}, err
	}
	return c, canonjson.Sum(DigestDomain, canon), nil
}

// decodeFast is Decode on the fast path.
func decodeFast(data []byte) (Command, error) {
	var s canonjson.Scanner
	s.Reset(data, decodeLimits)
	w := scanWire(&s)
	if err := s.Finish(); err != nil {
		return Command{}, err
	}
	c, _, err := w.command()
	return c, err
}

// scanWire fills a wire the way encoding/json does for the documents the
// scanner accepts: pointers and collections are allocated when present, an
// empty array or object gives an empty non-nil slice or map.
func scanWire(s *canonjson.Scanner) wire {
	var w wire
	if !s.Object() {
		return w
	}
	for key, ok := s.Key(); ok; key, ok = s.Key() {
		switch key {
		case "kind":
			w.Kind = s.String()
		case "argv":
			w.Argv = scanArgv(s)
		case "shell":
			w.Shell = scanShell(s)
		case "script":
			w.Script = scanScript(s)
		case "randomDelayMs":
			w.RandomDelayMs = s.Int64()
		case "environment":
			w.Environment = scanStringMap(s)
		case "env":
			w.Env = scanEnvScope(s)
		case "workingDirectory":
			w.WorkingDirectory = s.String()
		case "timeoutMs":
			n := s.Int64()
			w.TimeoutMs = &n
		case "retry":
			w.Retry = scanRetry(s)
		case "concurrency":
			c := ConcurrencyPolicy(s.String())
			w.Concurrency = &c
		case "placement":
			w.Placement = scanRequirements(s)
		case "limits":
			w.Limits = scanLimits(s)
		default:
			s.Fail()
		}
	}
	return w
}

func scanLimits(s *canonjson.Scanner) *Limits {
	l := &Limits{}
	if !s.Object() {
		return l
	}
	for key, ok := s.Key(); ok; key, ok = s.Key() {
		switch key {
		case "maxProcesses":
			l.MaxProcesses = s.Int()
		case "memoryBytes":
			l.MemoryBytes = s.Int64()
		default:
			s.Fail()
		}
	}
	return l
}

func scanArgv(s *canonjson.Scanner) *Argv {
	a := &Argv{}
	if !s.Object() {
		return a
	}
	for key, ok := s.Key(); ok; key, ok = s.Key() {
		switch key {
		case "file":
			a.File = s.String()
		case "args":
			a.Args = scanStrings(s)
		default:
			s.Fail()
		}
	}
	return a
}

func scanShell(s *canonjson.Scanner) *wireShell {
	sh := &wireShell{}
	if !s.Object() {
		return sh
	}
	for key, ok := s.Key(); ok; key, ok = s.Key() {
		switch key {
		case "command":
			sh.Command = s.String()
		case "shell":
			v := s.String()
			sh.Shell = &v
		default:
			s.Fail()
		}
	}
	return sh
}

func scanRetry(s *canonjson.Scanner) *wireRetry {
	r := &wireRetry{}
	if !s.Object() {
		return r
	}
	for key, ok := s.Key(); ok; key, ok = s.Key() {
		switch key {
		case "maxAttempts":
			n := s.Int()
			r.MaxAttempts = &n
		case "backoffBaseMs":
			r.BackoffBaseMs = s.Int64()
		case "backoffMaxMs":
			r.BackoffMaxMs = s.Int64()
		case "retryOnLost":
			r.RetryOnLost = s.Bool()
		default:
			s.Fail()
		}
	}
	return r
}

func scanRequirements(s *canonjson.Scanner) *placement.Requirements {
	r := &placement.Requirements{}
	if !s.Object() {
		return r
	}
	for key, ok := s.Key(); ok; key, ok = s.Key() {
		switch key {
		case "required":
			scanRequired(s, &r.Required)
		case "preferred":
			r.Preferred = scanPreferred(s)
		default:
			s.Fail()
		}
	}
	return r
}

func scanRequired(s *canonjson.Scanner, q *placement.Required) {
	if !s.Object() {
		return
	}
	for key, ok := s.Key(); ok; key, ok = s.Key() {
		switch key {
		case "os":
			q.OS = s.String()
		case "arch":
			q.Arch = s.String()
		case "executors":
			q.Executors = scanStrings(s)
		case "runtimes":
			q.Runtimes = scanStringMap(s)
		case "labels":
			q.Labels = scanStringMap(s)
		case "features":
			q.Features = scanStrings(s)
		default:
			s.Fail()
		}
	}
}

func scanPreferred(s *canonjson.Scanner) []placement.Preference {
	out := []placement.Preference{}
	if !s.Array() {
		return out
	}
	for s.More() {
		var p placement.Preference
		if s.Object() {
			for key, ok := s.Key(); ok; key, ok = s.Key() {
				switch key {
				case "label":
					p.Label = s.String()
				case "value":
					p.Value = s.String()
				case "weight":
					p.Weight = s.Int()
				default:
					s.Fail()
				}
			}
		}
		out = append(out, p)
	}
	return out
}

func scanStrings(s *canonjson.Scanner) []string {
	out := []string{}
	if !s.Array() {
		return out
	}
	for s.More() {
		out = append(out, s.String())
	}
	return out
}

func scanStringMap(s *canonjson.Scanner) map[string]string {
	m := map[string]string{}
	if !s.Object() {
		return m
	}
	for key, ok := s.Key(); ok; key, ok = s.Key() {
		m[key] = s.String()
	}
	return m
}
