package protocol

import (
	"strings"
	"testing"

	"github.com/ql3/ql3/core/canonjson"
	"github.com/ql3/ql3/core/errs"
)

func TestOfferRejections(t *testing.T) {
	o := offer(t)
	checkFieldCases(t, o, wrap(DecodeOffer), []fieldCase{
		{"no spec", del("spec"), "spec"},
		{"null spec", set("spec", nil), "spec"},
		{"spec unknown key", func(m map[string]any) { m["spec"].(map[string]any)["image"] = "x" }, "spec.image"},
		{"spec bad retry", func(m map[string]any) {
			m["spec"].(map[string]any)["retry"].(map[string]any)["maxAttempts"] = 17
		}, "spec.retry.maxAttempts"},
		{"spec changed under digest", func(m map[string]any) { m["spec"].(map[string]any)["timeoutMs"] = 600001 }, "specDigest"},
		{"spec digest of another spec", set("specDigest", canonjson.Sum("x", nil).String()), "specDigest"},
		{"spec digest missing", del("specDigest"), "specDigest"},
		{"revision digest malformed", set("executionRevisionDigest", "sha1:abc"), "executionRevisionDigest"},
		{"revision id missing", del("executionRevisionId"), "executionRevisionId"},
		{"token digest missing", del("leaseTokenDigest"), "leaseTokenDigest"},
		{"token itself instead of digest", set("leaseTokenDigest", string(token)), "leaseTokenDigest"},
		{"attempt 0", set("attemptNumber", 0), "attemptNumber"},
		{"attempt beyond policy", set("attemptNumber", 4), "attemptNumber"},
		{"timeout beyond spec", set("timeoutMs", 600_001), "timeoutMs"},
		{"timeout 0", set("timeoutMs", 0), "timeoutMs"},
		{"lease version 0", set("leaseVersion", 0), "leaseVersion"},
		{"lease expiry missing", del("leaseExpiresAtMs"), "leaseExpiresAtMs"},
		{"offer id", set("offerId", "nope"), "offerId"},
		{"worker id", set("workerId", ""), "workerId"},
		{"session generation", set("generation", 0), "generation"},
		{"plain token field", set("leaseToken", string(token)), "leaseToken"},
		{"task id missing", del("taskId"), "taskId"},
		{"task revision 0", set("taskRevision", 0), "taskRevision"},
		{"scheduled before the epoch", set("scheduledForMs", -1), "scheduledForMs"},
		{"scheduled after year 9999", set("scheduledForMs", MaxEpochMs+1), "scheduledForMs"},
	})
}

func TestOfferAnswersPull(t *testing.T) {
	o, p := offer(t), pull()
	if err := o.AnswersPull(p); err != nil {
		t.Fatalf("offer does not answer its own pull: %v", err)
	}
	cases := []struct {
		name  string
		f     func(*OfferPullRequest)
		field string
	}{
		{"other session", func(p *OfferPullRequest) { p.SessionID = "s2" }, "sessionId"},
		{"other generation", func(p *OfferPullRequest) { p.Generation++ }, "generation"},
		{"other offer id", func(p *OfferPullRequest) { p.OfferID = "00000000-0000-4000-8000-000000000009" }, "offerId"},
		{"other token", func(p *OfferPullRequest) { p.LeaseToken = "AQIDBAUGBwgJCgsMDQ4PEBESExQVFhcYGRobHB0eHyA" }, "leaseTokenDigest"},
	}
	for _, c := range cases {
		q := pull()
		c.f(&q)
		err := o.AnswersPull(q)
		if errs.Code(err) != errs.Conflict || errs.Field(err) != c.field {
			t.Errorf("%s: %v, want conflict on %s", c.name, err, c.field)
		}
	}
}

// The largest spec the spec package accepts still fits in an offer.
func TestOfferCarriesLargestSpec(t *testing.T) {
	o := offer(t)
	env := map[string]string{}
	// 64 KiB canonical spec budget: fill the environment close to it.
	for i := 0; i < 15; i++ {
		env["VAR_"+string(rune('A'+i))] = strings.Repeat("v", 4000)
	}
	o.Spec.Environment = env
	d, err := o.Spec.Digest()
	if err != nil {
		t.Fatalf("spec: %v", err)
	}
	o.SpecDigest = d
	raw, err := o.Encode()
	if err != nil {
		t.Fatalf("Encode: %v", err)
	}
	if len(raw) < 56<<10 || len(raw) > MaxOfferBytes {
		t.Fatalf("offer with a ~60 KiB spec is %d bytes, want 56 KiB..MaxOfferBytes", len(raw))
	}
	if _, err := DecodeOffer(raw); err != nil {
		t.Fatalf("DecodeOffer: %v", err)
	}
}

func TestEncodeRefusesInvalid(t *testing.T) {
	o := offer(t)
	o.TimeoutMs = 0
	if _, err := o.Encode(); errs.Field(err) != "timeoutMs" {
		t.Errorf("Offer.Encode: %v", err)
	}
	s := sessionOpen()
	s.Capacity = 0
	if _, err := s.Encode(); errs.Field(err) != "capacity" {
		t.Errorf("SessionOpen.Encode: %v", err)
	}
	h := heartbeat(t)
	h.CapabilitiesDigest = canonjson.Digest{}
	if _, err := h.Encode(); errs.Field(err) != "capabilitiesDigest" {
		t.Errorf("SessionHeartbeat.Encode: %v", err)
	}
}

func BenchmarkDecodeOffer(b *testing.B) {
	raw, err := offer(b).Encode()
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := DecodeOffer(raw); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecodeAck(b *testing.B) {
	raw, err := ack().Encode()
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := DecodeAck(raw); err != nil {
			b.Fatal(err)
		}
	}
}
