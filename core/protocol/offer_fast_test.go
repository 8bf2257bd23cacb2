package protocol

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/ql3/ql3/core/internal/fastcheck"
)

// checkOfferFastPath holds decodeOfferFast to decodeOfferReference for one
// body (fastcheck.Check; the encoding is Offer.Encode) and reports whether
// the fast path accepted it.
func checkOfferFastPath(t *testing.T, data []byte) bool {
	t.Helper()
	return fastcheck.Check(t, data, decodeOfferFast, decodeOfferReference, Offer.Encode)
}

func TestOfferFastPath(t *testing.T) {
	raw, err := offer(t).Encode()
	if err != nil {
		t.Fatal(err)
	}
	if !checkOfferFastPath(t, raw) {
		t.Fatalf("the example offer is not on the fast path: %s", raw)
	}
	o, err := DecodeOffer(raw)
	if err != nil || !reflect.DeepEqual(o, offer(t)) {
		t.Fatalf("DecodeOffer = %#v, %v", o, err)
	}
	s := string(raw)
	for _, c := range []struct {
		name string
		body string
		fast bool
	}{
		{"indented", indented(t, raw), true},
		{"escaped slash in a value", strings.Replace(s, `"/opt/jobs"`, `"\/opt\/jobs"`, 1), true},
		{"null spec", strings.Replace(s, `"spec":{`, `"spec":null,"x":{`, 1), false},
		{"upper-case key", strings.Replace(s, `"runId"`, `"RunId"`, 1), false},
		{"unknown key", strings.Replace(s, `{"v":1,`, `{"v":1,"extra":0,`, 1), false},
		{"duplicate key", strings.Replace(s, `{"v":1,`, `{"v":1,"v":1,`, 1), false},
		{"float", strings.Replace(s, `"generation":3`, `"generation":3.0`, 1), false},
		{"trailing data", s + " {}", false},
		{"lone surrogate", strings.Replace(s, `"run_1"`, `"run_1\ud800"`, 1), false},
	} {
		if got := checkOfferFastPath(t, []byte(c.body)); got != c.fast {
			t.Errorf("%s: fast path %v, want %v", c.name, got, c.fast)
		}
	}
	// Validation faults after a clean scan: the same code and field as the
	// reference (checkOfferFastPath), whichever path answers.
	for _, body := range []string{
		strings.Replace(s, `"attemptNumber":2`, `"attemptNumber":9`, 1),
		strings.Replace(s, `"timeoutMs":300000}`, `"timeoutMs":0}`, 1),
		strings.Replace(s, `"leaseVersion":1`, `"leaseVersion":0`, 1),
		strings.Replace(s, `"v":1`, `"v":2`, 1),
		strings.Replace(s, `"timeoutMs":600000`, `"timeoutMs":600001`, 1),
		strings.Replace(s, `"maxAttempts":3`, `"maxAttempts":17`, 1),
		strings.Replace(s, `,"specDigest":"`, `,"specDigest":"x`, 1),
		strings.Replace(s, `"spec":{`, `"specX":{`, 1),
	} {
		if body == s {
			t.Fatalf("mutation did not apply to %s", s)
		}
		if checkOfferFastPath(t, []byte(body)) {
			t.Errorf("fast path accepted %s", body)
		}
	}
}

// FuzzDecodeOfferFastPath: the offer fast path and the reference strict
// decoder agree on accept/refuse and on the decoded value (see
// checkOfferFastPath).
func FuzzDecodeOfferFastPath(f *testing.F) {
	raw, err := offer(f).Encode()
	if err != nil {
		f.Fatal(err)
	}
	s := string(raw)
	withEnv, err := offerWithEnv(f, EnvVar{"A", "v1&v2"}, EnvVar{"B", "x"}).Encode()
	if err != nil {
		f.Fatal(err)
	}
	for _, seed := range []string{
		s,
		string(withEnv),
		strings.Replace(s, `"v":1`, `"v":2`, 1),
		strings.Replace(s, `{"v":1,`, `{"v":1,"V":1,`, 1),
		strings.Replace(s, `"run_1"`, `"run_1\ud800"`, 1),
		strings.Replace(s, `"maxAttempts":3`, `"maxAttempts":null`, 1),
		s[:len(s)/2],
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkOfferFastPath(t, data)
	})
}

func indented(t *testing.T, raw []byte) string {
	var b bytes.Buffer
	if err := json.Indent(&b, raw, "", "  "); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// BenchmarkDecodeOfferLargestSpec decodes an offer carrying a ~60 KiB spec
// (15 environment variables of 4,000 bytes), the fast path's worst
// realistic case.
func BenchmarkDecodeOfferLargestSpec(b *testing.B) {
	o := offer(b)
	env := map[string]string{}
	for i := 0; i < 15; i++ {
		env["VAR_"+string(rune('A'+i))] = strings.Repeat("v", 4000)
	}
	o.Spec.Environment = env
	d, err := o.Spec.Digest()
	if err != nil {
		b.Fatal(err)
	}
	o.SpecDigest = d
	raw, err := o.Encode()
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.SetBytes(int64(len(raw)))
	for b.Loop() {
		if _, err := DecodeOffer(raw); err != nil {
			b.Fatal(err)
		}
	}
}
