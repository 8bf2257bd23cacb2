package errs

import (
	"errors"
	"fmt"
	"testing"
)

func TestHTTPStatusRoundTrip(t *testing.T) {
	for _, code := range []string{Invalid, TooLarge, NotFound, Conflict, Unauthorized, Forbidden, Unavailable, Internal} {
		if got := CodeForHTTPStatus(HTTPStatus(code)); got != code {
			t.Errorf("code %q → status %d → code %q", code, HTTPStatus(code), got)
		}
	}
	if HTTPStatus("nonsense") != 500 || CodeForHTTPStatus(418) != Internal {
		t.Error("unknown codes and statuses must map to internal/500")
	}
}

func TestPublicHidesInternalDetail(t *testing.T) {
	cases := []struct {
		err      error
		want     Body
		internal bool
	}{
		{fmt.Errorf("ctx: %w", Invalidf("spec.timeoutMs", "must be 1..31536000000")), Body{Invalid, "must be 1..31536000000", "spec.timeoutMs"}, false},
		{errors.New("pq: relation ql3.runs does not exist at /var/lib/x"), Body{Internal, "internal error", ""}, true},
		{E(Internal, "x", "driver detail"), Body{Internal, "internal error", ""}, true},
	}
	for _, c := range cases {
		got, internal := Public(c.err)
		if got != c.want || internal != c.internal {
			t.Errorf("Public(%v) = %+v, %v; want %+v, %v", c.err, got, internal, c.want, c.internal)
		}
	}
	if e := FromBody(Body{Conflict, "stale", "revision"}); Code(e) != Conflict || Field(e) != "revision" {
		t.Errorf("FromBody lost the code or field: %+v", e)
	}
}
