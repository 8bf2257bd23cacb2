package spec

import (
	"maps"
	"slices"

	"github.com/ql3/ql3/core/canonjson"
	"github.com/ql3/ql3/core/placement"
)

// appendCanonical writes a normalized Command in canonical JSON (ADR 0003:
// keys sorted bytewise, no insignificant whitespace, strings as
// encoding/json writes them without HTML escaping), byte for byte what
// canonjson.Canonical produces for it — TestCanonicalMatchesReference and
// FuzzDecode hold it to that — without reflection or a generic tree. The
// members below are in sorted order and follow the struct tags'
// omitempty rules.
func appendCanonical(b []byte, c Command) []byte {
	b = append(b, '{')
	if c.Argv != nil {
		b = append(b, `"argv":{`...)
		if len(c.Argv.Args) > 0 {
			b = append(b, `"args":`...)
			b = appendStrings(b, c.Argv.Args)
			b = append(b, ',')
		}
		b = append(b, `"file":`...)
		b = canonjson.AppendString(b, c.Argv.File)
		b = append(b, `},`...)
	}
	b = append(b, `"concurrency":`...)
	b = canonjson.AppendString(b, string(c.Concurrency))
	if c.Env != nil {
		b = append(b, `,"env":`...)
		b = appendEnvScope(b, c.Env)
	}
	if len(c.Environment) > 0 {
		b = append(b, `,"environment":`...)
		b = appendStringMap(b, c.Environment)
	}
	b = append(b, `,"kind":`...)
	b = canonjson.AppendString(b, c.Kind)
	if c.Limits != nil {
		b = append(b, `,"limits":{`...)
		if c.Limits.MaxProcesses != 0 {
			b = append(b, `"maxProcesses":`...)
			b = canonjson.AppendInt(b, int64(c.Limits.MaxProcesses))
			if c.Limits.MemoryBytes != 0 {
				b = append(b, ',')
			}
		}
		if c.Limits.MemoryBytes != 0 {
			b = append(b, `"memoryBytes":`...)
			b = canonjson.AppendInt(b, c.Limits.MemoryBytes)
		}
		b = append(b, '}')
	}
	if c.Placement != nil {
		b = append(b, `,"placement":`...)
		b = appendRequirements(b, c.Placement)
	}
	if c.RandomDelayMs != 0 {
		b = append(b, `,"randomDelayMs":`...)
		b = canonjson.AppendInt(b, c.RandomDelayMs)
	}
	b = append(b, `,"retry":{"backoffBaseMs":`...)
	b = canonjson.AppendInt(b, c.Retry.BackoffBaseMs)
	b = append(b, `,"backoffMaxMs":`...)
	b = canonjson.AppendInt(b, c.Retry.BackoffMaxMs)
	b = append(b, `,"maxAttempts":`...)
	b = canonjson.AppendInt(b, int64(c.Retry.MaxAttempts))
	b = append(b, `,"retryOnLost":`...)
	b = appendBool(b, c.Retry.RetryOnLost)
	b = append(b, '}')
	if c.Script != nil {
		b = append(b, `,"script":{`...)
		if len(c.Script.Args) > 0 {
			b = append(b, `"args":`...)
			b = appendStrings(b, c.Script.Args)
			b = append(b, ',')
		}
		b = append(b, `"file":`...)
		b = canonjson.AppendString(b, c.Script.File)
		b = append(b, '}')
	}
	if c.Shell != nil {
		b = append(b, `,"shell":{"command":`...)
		b = canonjson.AppendString(b, c.Shell.Command)
		if c.Shell.Shell != "" {
			b = append(b, `,"shell":`...)
			b = canonjson.AppendString(b, c.Shell.Shell)
		}
		b = append(b, '}')
	}
	b = append(b, `,"timeoutMs":`...)
	b = canonjson.AppendInt(b, c.TimeoutMs)
	if c.WorkingDirectory != "" {
		b = append(b, `,"workingDirectory":`...)
		b = canonjson.AppendString(b, c.WorkingDirectory)
	}
	return append(b, '}')
}

func appendRequirements(b []byte, r *placement.Requirements) []byte {
	b = append(b, '{')
	if len(r.Preferred) > 0 {
		b = append(b, `"preferred":[`...)
		for i, p := range r.Preferred {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"label":`...)
			b = canonjson.AppendString(b, p.Label)
			b = append(b, `,"value":`...)
			b = canonjson.AppendString(b, p.Value)
			b = append(b, `,"weight":`...)
			b = canonjson.AppendInt(b, int64(p.Weight))
			b = append(b, '}')
		}
		b = append(b, `],`...)
	}
	q := &r.Required
	b = append(b, `"required":{`...)
	n := 0
	member := func(name string) {
		if n > 0 {
			b = append(b, ',')
		}
		n++
		b = canonjson.AppendString(b, name)
		b = append(b, ':')
	}
	if q.Arch != "" {
		member("arch")
		b = canonjson.AppendString(b, q.Arch)
	}
	if len(q.Executors) > 0 {
		member("executors")
		b = appendStrings(b, q.Executors)
	}
	if len(q.Features) > 0 {
		member("features")
		b = appendStrings(b, q.Features)
	}
	if len(q.Labels) > 0 {
		member("labels")
		b = appendStringMap(b, q.Labels)
	}
	if q.OS != "" {
		member("os")
		b = canonjson.AppendString(b, q.OS)
	}
	if len(q.Runtimes) > 0 {
		member("runtimes")
		b = appendStringMap(b, q.Runtimes)
	}
	return append(b, `}}`...)
}

func appendStrings(b []byte, list []string) []byte {
	b = append(b, '[')
	for i, s := range list {
		if i > 0 {
			b = append(b, ',')
		}
		b = canonjson.AppendString(b, s)
	}
	return append(b, ']')
}

func appendStringMap(b []byte, m map[string]string) []byte {
	b = append(b, '{')
	for i, k := range slices.Sorted(maps.Keys(m)) {
		if i > 0 {
			b = append(b, ',')
		}
		b = canonjson.AppendString(b, k)
		b = append(b, ':')
		b = canonjson.AppendString(b, m[k])
	}
	return append(b, '}')
}

func appendBool(b []byte, v bool) []byte {
	if v {
		return append(b, "true"...)
	}
	return append(b, "false"...)
}
