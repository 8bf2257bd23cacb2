package renewal

import (
	"regexp"
	"testing"
)

// TestRenewTypesEveryBindParameter: seed ADR-0235's lesson, as for every
// dispatch statement — each bind parameter carries an explicit type at
// every use (PostgreSQL 18 refused an untyped reuse with 42P08).
func TestRenewTypesEveryBindParameter(t *testing.T) {
	uses := regexp.MustCompile(`\$[0-9]+(::)?`).FindAllString(sqlRenew, -1)
	if len(uses) == 0 {
		t.Fatal("no bind parameter found; the check would be vacuous")
	}
	for _, u := range uses {
		if len(u) < 3 || u[len(u)-2:] != "::" {
			t.Errorf("bind parameter %q without an explicit type", u)
		}
	}
}
