package agent_test

import (
	"context"
	"testing"

	"github.com/ql3/ql3/worker/agent"
)

func TestNormalizeVersion(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"Python 3.11.2\n", "3.11.2"},
		{"v20.11.0\n", "20.11.0"},
		{"GNU bash, version 5.2.15(1)-release (x86_64-pc-linux-gnu)\n", "5.2.15"},
		{"Python 3.12", "3.12.0"},
		{"node v018.01.2", "18.1.2"},
		{"md5 x86_64 no version", ""},
		{"(1) 7", ""},
		{"", ""},
		{"version 1234567890.1", ""},
	} {
		if got := agent.NormalizeVersion(c.in); got != c.want {
			t.Errorf("NormalizeVersion(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func FuzzNormalizeVersion(f *testing.F) {
	f.Add("GNU bash, version 5.2.15(1)-release")
	f.Add("Python 3.11.2")
	f.Fuzz(func(t *testing.T, s string) {
		v := agent.NormalizeVersion(s)
		if v == "" {
			return
		}
		dots := 0
		for i := 0; i < len(v); i++ {
			switch {
			case v[i] == '.':
				dots++
			case v[i] < '0' || v[i] > '9':
				t.Fatalf("%q → %q is not MAJOR.MINOR.PATCH", s, v)
			}
		}
		if dots != 2 || len(v) > 32 {
			t.Fatalf("%q → %q is not MAJOR.MINOR.PATCH", s, v)
		}
	})
}

// The probe's result is a valid capabilities document.
func TestProbeCapabilitiesValidates(t *testing.T) {
	c := agent.ProbeCapabilities(context.Background(), map[string]string{"zone": "lab"})
	if err := c.Validate(); err != nil {
		t.Fatalf("%+v: %v", c, err)
	}
	if c.OS == "" || c.Arch == "" || c.Labels["zone"] != "lab" {
		t.Fatalf("%+v", c)
	}
	t.Logf("probed: %+v", c)
}
