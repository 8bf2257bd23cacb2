package protocol

import (
	"strings"
	"testing"

	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/placement"
)

// TestSessionOpenRefusesSystemExecutors: a worker over the wire cannot
// advertise an executor reserved for the control plane (ADR 0061).
func TestSessionOpenRefusesSystemExecutors(t *testing.T) {
	for _, ex := range []string{placement.SubscriptionExecutor, "ql3.anything"} {
		body := `{"v":1,"agentVersion":"w","credentialId":"0190a000-0000-7000-8000-000000000001","capacity":1,` +
			`"capabilities":{"os":"linux","arch":"amd64","executors":["argv","` + ex + `"]}}`
		_, err := DecodeSessionOpen([]byte(body))
		if errs.Code(err) != errs.Invalid || !strings.Contains(err.Error(), "reserved") {
			t.Errorf("%s: %v", ex, err)
		}
	}
	ok := `{"v":1,"agentVersion":"w","credentialId":"0190a000-0000-7000-8000-000000000001","capacity":1,` +
		`"capabilities":{"os":"linux","arch":"amd64","executors":["argv"]}}`
	if _, err := DecodeSessionOpen([]byte(ok)); err != nil {
		t.Fatalf("an ordinary session: %v", err)
	}
}
