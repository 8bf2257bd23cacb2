package lease

import (
	"strings"
	"testing"

	"github.com/ql3/ql3/core/errs"
)

func TestDefaultIsValid(t *testing.T) {
	p := Default()
	if err := p.Validate(); err != nil {
		t.Fatalf("Default().Validate() = %v", err)
	}
	if got := p.GiveUpMs(); got != 30_000 {
		t.Fatalf("GiveUpMs = %d, want 30000 (45 s − 5 s − 10 s)", got)
	}
}

func TestValidate(t *testing.T) {
	with := func(f func(*Policy)) Policy { p := Default(); f(&p); return p }
	cases := []struct {
		name  string
		p     Policy
		field string   // "" = valid
		words []string // the message names these values
	}{
		{"defaults", Default(), "", nil},
		{"heartbeat just under the give-up point", with(func(p *Policy) { p.HeartbeatMs, p.SessionMs = 29_999, 60_000 }), "", nil},
		// The bug of issue 20: a 40 s heartbeat with the 45 s attempt lease:
		// the worker stops each running attempt 30 s after its last renewal.
		{"heartbeat 40 s past the give-up point", with(func(p *Policy) { p.HeartbeatMs, p.SessionMs = 40_000, 90_000 }),
			"heartbeatMs", []string{"40000", "30000", "45000"}},
		{"heartbeat equal to the give-up point", with(func(p *Policy) { p.HeartbeatMs, p.SessionMs = 30_000, 60_000 }),
			"heartbeatMs", []string{"30000"}},
		{"a longer started lease makes room", with(func(p *Policy) { p.HeartbeatMs, p.SessionMs, p.StartedMs = 40_000, 90_000, 60_000 }), "", nil},
		{"a worker kill grace that eats the lease", with(func(p *Policy) { p.KillGraceMs = 40_000 }),
			"heartbeatMs", []string{"40000", "10000"}},
		{"session under two heartbeats", with(func(p *Policy) { p.SessionMs = 19_999 }), "sessionMs", []string{"20000", "19999"}},
		{"heartbeat too short", with(func(p *Policy) { p.HeartbeatMs = 4_999 }), "heartbeatMs", []string{"4999"}},
		{"heartbeat too long", with(func(p *Policy) { p.HeartbeatMs = 60_001 }), "heartbeatMs", []string{"60001"}},
		{"claim too short", with(func(p *Policy) { p.ClaimMs = 999 }), "claimMs", nil},
		{"claim too long", with(func(p *Policy) { p.ClaimMs = 60_001 }), "claimMs", nil},
		{"session too long", with(func(p *Policy) { p.SessionMs = 600_001 }), "sessionMs", nil},
		{"unstarted zero", with(func(p *Policy) { p.UnstartedMs = 0 }), "unstartedMs", nil},
		{"started too long", with(func(p *Policy) { p.StartedMs = 600_001 }), "startedMs", nil},
		{"cancel grace negative", with(func(p *Policy) { p.CancelGraceMs = -1 }), "cancelGraceMs", nil},
		{"cancel grace zero", with(func(p *Policy) { p.CancelGraceMs = 0 }), "cancelGraceMs", nil},
		{"cancel grace too long", with(func(p *Policy) { p.CancelGraceMs = 300_001 }), "cancelGraceMs", nil},
		{"fence margin zero", with(func(p *Policy) { p.FenceMarginMs = 0 }), "fenceMarginMs", nil},
		{"kill grace too long", with(func(p *Policy) { p.KillGraceMs = 300_001 }), "killGraceMs", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.p.Validate()
			if c.field == "" {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate() = nil, want an error on %s", c.field)
			}
			if errs.Code(err) != errs.Invalid || errs.Field(err) != c.field {
				t.Fatalf("Validate() = %v (code %s, field %q), want invalid on %q", err, errs.Code(err), errs.Field(err), c.field)
			}
			for _, w := range c.words {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Validate() = %q, want it to name %s", err, w)
				}
			}
		})
	}
}

func TestD(t *testing.T) {
	if got := D(DefaultStartedMs).String(); got != "45s" {
		t.Fatalf("D(DefaultStartedMs) = %s, want 45s", got)
	}
}
