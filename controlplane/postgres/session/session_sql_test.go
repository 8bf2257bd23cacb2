package session

import (
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/ql3/ql3/core/protocol"
)

// paramUse matches a bind parameter and its explicit cast, if any
// ($5::text, $2::uuid::text — the first cast types the parameter).
var paramUse = regexp.MustCompile(`\$(\d+)(::[a-z]+(?:\[\])?)?`)

// untypedReuse returns the parameters of sql that occur more than once
// without the same explicit cast at every occurrence (seed ADR-0235: the
// server must never infer one type from two contexts).
func untypedReuse(sql string) []string {
	casts := map[string][]string{}
	for _, m := range paramUse.FindAllStringSubmatch(sql, -1) {
		casts[m[1]] = append(casts[m[1]], m[2])
	}
	var bad []string
	for n, cs := range casts {
		if len(cs) < 2 {
			continue
		}
		for _, c := range cs {
			if c == "" || c != cs[0] {
				bad = append(bad, "$"+n+" "+strings.Join(cs, ","))
				break
			}
		}
	}
	sort.Strings(bad)
	return bad
}

func TestSessionSQLTypesReusedParams(t *testing.T) {
	// The checker itself catches the seed's failure and its near misses.
	for _, bad := range []string{
		`UPDATE s SET status = $5 WHERE $5 = 'offline'`,
		`UPDATE s SET status = $5::varchar WHERE $5 = 'offline'`,
		`SELECT $1::uuid, $1::text`,
	} {
		if len(untypedReuse(bad)) == 0 {
			t.Fatalf("checker misses the untyped reuse in %q", bad)
		}
	}
	if got := untypedReuse(`UPDATE s SET status = $5::text WHERE $5::text = 'offline' AND id = $1`); len(got) != 0 {
		t.Fatalf("checker refuses a correctly typed statement: %v", got)
	}
	if len(sessionStatements) < 8 {
		t.Fatalf("only %d session statements listed; the check would be vacuous", len(sessionStatements))
	}
	for name, sql := range sessionStatements {
		if bad := untypedReuse(sql); len(bad) > 0 {
			t.Errorf("statement %s reuses parameters without one explicit type: %v", name, bad)
		}
	}
}

func TestDecideTransition(t *testing.T) {
	live := sessionRow{status: "online", expiresAtMs: 2000, nowMs: 1000}
	expired := sessionRow{status: "online", expiresAtMs: 1000, nowMs: 1000} // half-open: expired at T
	draining := sessionRow{status: "draining", expiresAtMs: 2000, nowMs: 1000}
	offline := sessionRow{status: "offline", expiresAtMs: 2000, nowMs: 1000}
	for _, c := range []struct {
		name string
		row  sessionRow
		to   string
		want transitionDecision
	}{
		{"online → draining", live, "draining", transitionApply},
		{"online → offline", live, "offline", transitionApply},
		{"expired → draining fails closed", expired, "draining", transitionExpired},
		{"expired → offline only removes authority", expired, "offline", transitionApply},
		{"draining → draining again", draining, "draining", transitionAlready},
		{"draining → offline", draining, "offline", transitionApply},
		{"offline → offline again", offline, "offline", transitionAlready},
		{"offline → draining", offline, "draining", transitionBackwards},
	} {
		if got := decideTransition(c.row, protocolStatus(c.to)); got != c.want {
			t.Errorf("%s: got %d, want %d", c.name, got, c.want)
		}
	}
}

func protocolStatus(s string) protocol.SessionStatus { return protocol.SessionStatus(s) }
