// Package access names what a credential may do: the scopes of ql3's own
// API tokens and of QingLong-compatible Open API apps, and which scope a
// request needs. Pure functions; the HTTP layers apply them.
package access

import (
	"slices"
	"strings"

	"github.com/ql3/ql3/core/errs"
)

// Scope of a native API token.
type Scope string

// Native token scopes. Admin implies every other; ReadOnly allows every
// safe (GET/HEAD) request except the audit log and the token, app and
// account lists; Runs allows starting and cancelling runs; Envs the env
// store; Scripts the scripts folder.
const (
	ReadOnly Scope = "read-only"
	Runs     Scope = "runs"
	Envs     Scope = "envs"
	Scripts  Scope = "scripts"
	Admin    Scope = "admin"
)

// NativeScopes lists the native scopes in display order.
var NativeScopes = []Scope{ReadOnly, Runs, Envs, Scripts, Admin}

// AppScopes are the QingLong Open API app scopes ql3 serves: the first
// path segment after /open/ (QingLong's back/loaders/express.ts matches
// it the same way).
var AppScopes = []string{"envs", "crons", "scripts", "logs", "system"}

// MaxScopes bounds a scope list.
const MaxScopes = 8

// ParseScopes checks a native scope list: known names, no duplicates, at
// least one.
func ParseScopes(field string, in []string) ([]Scope, error) {
	return parse(field, in, func(s string) bool { return slices.Contains(NativeScopes, Scope(s)) }, nativeNames())
}

// ParseAppScopes checks an Open API app's scope list.
func ParseAppScopes(field string, in []string) ([]string, error) {
	out, err := parse(field, in, func(s string) bool { return slices.Contains(AppScopes, s) }, strings.Join(AppScopes, ", "))
	if err != nil {
		return nil, err
	}
	names := make([]string, len(out))
	for i, s := range out {
		names[i] = string(s)
	}
	return names, nil
}

func nativeNames() string {
	var b []string
	for _, s := range NativeScopes {
		b = append(b, string(s))
	}
	return strings.Join(b, ", ")
}

func parse(field string, in []string, known func(string) bool, list string) ([]Scope, error) {
	if len(in) == 0 {
		return nil, errs.Invalidf(field, "give at least one scope (%s)", list)
	}
	if len(in) > MaxScopes {
		return nil, errs.Invalidf(field, "at most %d scopes", MaxScopes)
	}
	out := make([]Scope, 0, len(in))
	for i, s := range in {
		if !known(s) {
			return nil, errs.Invalidf(field, "scope %d: %.32q is not one of %s", i, s, list)
		}
		if slices.Contains(out, Scope(s)) {
			return nil, errs.Invalidf(field, "scope %.32q is listed twice", s)
		}
		out = append(out, Scope(s))
	}
	return out, nil
}

// Needed is the scope a native API request needs (method, URL path). The
// second result is false for paths only Admin may use (tokens, apps,
// accounts, the audit log, the env key). The control plane's project
// folders (/api/v1/projects/{project}/envs…, …/scripts…) need what the
// edge's /api/v1/envs… and /api/v1/scripts… need.
func Needed(method, path string) (Scope, bool) {
	path = projectFolder(path)
	safe := method == "GET" || method == "HEAD"
	switch {
	case path == "/api/v1/audit" || strings.HasPrefix(path, "/api/v1/tokens") ||
		strings.HasPrefix(path, "/api/v1/apps") || strings.HasPrefix(path, "/api/v1/users") ||
		strings.HasPrefix(path, "/api/v1/signins") || path == "/api/v1/envs/rotate-key":
		return Admin, false
	case strings.HasPrefix(path, "/api/v1/envs"):
		return Envs, true
	case strings.HasPrefix(path, "/api/v1/scripts"):
		return Scripts, true
	case safe:
		return ReadOnly, true
	case method == "POST" && (strings.HasSuffix(path, "/runs") || strings.HasSuffix(path, "/cancel")) &&
		(strings.HasPrefix(path, "/api/v1/tasks/") || strings.HasPrefix(path, "/api/v1/runs/")):
		return Runs, true
	}
	return Admin, false
}

// projectFolder rewrites /api/v1/projects/{project}/envs… and …/scripts…
// to the edge's /api/v1/envs… and /api/v1/scripts…; other paths stay.
func projectFolder(path string) string {
	rest, ok := strings.CutPrefix(path, "/api/v1/projects/")
	if !ok {
		return path
	}
	_, sub, ok := strings.Cut(rest, "/")
	if ok && (sub == "envs" || strings.HasPrefix(sub, "envs/") || sub == "scripts" || strings.HasPrefix(sub, "scripts/")) {
		return "/api/v1/" + sub
	}
	return path
}

// Allows reports whether a token holding have may make the request.
func Allows(have []Scope, method, path string) bool {
	if slices.Contains(have, Admin) {
		return true
	}
	need, ok := Needed(method, path)
	if !ok {
		return false
	}
	if slices.Contains(have, need) {
		return true
	}
	// Runs includes reading what it starts.
	return need == ReadOnly && slices.Contains(have, Runs)
}
