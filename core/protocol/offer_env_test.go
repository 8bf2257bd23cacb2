package protocol

import (
	"reflect"
	"strings"
	"testing"

	"github.com/ql3/ql3/core/env"
	"github.com/ql3/ql3/core/errs"
)

func offerWithEnv(t testing.TB, vars ...EnvVar) Offer {
	o := offer(t)
	o.Env = vars
	return o
}

// An offer with env values round-trips through both decoders, also a
// 128 KiB joined value (beyond the spec's string limit: the env member is
// read under widened limits).
func TestOfferEnvRoundTrips(t *testing.T) {
	for _, c := range []struct {
		name string
		vars []EnvVar
		fast bool
	}{
		{"small", []EnvVar{{"A", "v1&v2"}, {"B_2", "tok\"en\n"}}, true},
		{"largest value", []EnvVar{{"BIG", strings.Repeat("x", env.MaxJoinedBytes)}}, true},
	} {
		want := offerWithEnv(t, c.vars...)
		raw, err := want.Encode()
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got := checkOfferFastPath(t, raw); got != c.fast {
			t.Errorf("%s: fast path %v, want %v", c.name, got, c.fast)
		}
		got, err := DecodeOffer(raw)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: DecodeOffer = %v", c.name, err)
		}
		if secrets := got.EnvSecrets(); len(secrets) == 0 {
			t.Errorf("%s: no secrets to mask", c.name)
		}
	}
	// "env": [] decodes as no env on both paths.
	raw, _ := offer(t).Encode()
	body := strings.Replace(string(raw), `"timeoutMs":300000}`, `"timeoutMs":300000,"env":[]}`, 1)
	if !checkOfferFastPath(t, []byte(body)) {
		t.Fatal("empty env is not on the fast path")
	}
	// The widened limits are the env's alone: a spec string past the
	// spec's limit is refused on both paths.
	long := strings.Replace(string(raw), `"python3 /opt/jobs/sign.py --all"`, `"`+strings.Repeat("y", 20<<10)+`"`, 1)
	if checkOfferFastPath(t, []byte(long)) {
		t.Fatal("fast path accepted a 20 KiB spec string")
	}
}

func TestOfferEnvRefusals(t *testing.T) {
	for _, c := range []struct {
		name  string
		vars  []EnvVar
		field string
	}{
		{"reserved", []EnvVar{{"QL3_X", "v"}}, "env[0].name"},
		{"NUL", []EnvVar{{"A", "a\x00b"}}, "env[0].value"},
		{"order", []EnvVar{{"B", "1"}, {"A", "2"}}, "env[1].name"},
		{"twice", []EnvVar{{"A", "1"}, {"A", "2"}}, "env[1].name"},
		{"value too long", []EnvVar{{"A", strings.Repeat("x", env.MaxValueBytes+1)}}, "env[0].value"},
	} {
		o := offerWithEnv(t, c.vars...)
		if _, err := o.Encode(); errs.Field(err) != c.field {
			t.Errorf("%s: Encode = %v, want field %s", c.name, err, c.field)
		}
	}
	// More than 1 MiB altogether.
	var vars []EnvVar
	for i := 0; i < 9; i++ {
		vars = append(vars, EnvVar{"V" + string(rune('A'+i)), strings.Repeat("x", env.MaxValueBytes)})
	}
	if _, err := offerWithEnv(t, vars...).Encode(); errs.Field(err) != "env" || !strings.Contains(err.Error(), "1 MiB") {
		t.Errorf("over 1 MiB: %v", err)
	}
}
