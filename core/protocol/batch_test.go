package protocol

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/fence"
)

func pullBatch(t testing.TB, n int) OfferPullBatch {
	b := OfferPullBatch{V: 1, SessionID: sessionID, Generation: 3}
	for i := range n {
		tok, err := fence.NewLeaseToken(rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		id := offerID
		if i > 0 {
			id = strings.Replace(offerID, offerID[len(offerID)-2:], []string{"01", "02", "03", "04", "05", "06", "07", "08", "09", "0a", "0b", "0c", "0d", "0e", "0f"}[i-1], 1)
		}
		b.Pulls = append(b.Pulls, OfferPullItem{OfferID: id, LeaseToken: tok})
	}
	return b
}

func leaseBatch() LeaseBatch {
	running := ack()
	running.Phase = AckRunning
	return LeaseBatch{V: 1, Acks: []Ack{ack(), running}, Completions: []Completion{completion()}}
}

func TestBatchRoundTrips(t *testing.T) {
	pb := pullBatch(t, 4)
	raw, err := pb.Encode()
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeOfferPullBatch(raw)
	if err != nil || !reflect.DeepEqual(got, pb) {
		t.Fatalf("pull batch round trip: %v\n%#v\n%#v", err, got, pb)
	}
	lb := leaseBatch()
	raw, err = lb.Encode()
	if err != nil {
		t.Fatal(err)
	}
	back, err := DecodeLeaseBatch(raw)
	if err != nil || !reflect.DeepEqual(back, lb) {
		t.Fatalf("lease batch round trip: %v\n%#v\n%#v", err, back, lb)
	}
	c, r := control(), receipt()
	ans := LeaseBatchAnswer{V: 1, Acks: []AckOutcome{{Control: &c}, {Error: NewItemError(errs.E(errs.Conflict, "phase", "attempt is succeeded"))}},
		Completions: []CompletionOutcome{{Receipt: &r}}}
	raw, err = ans.Encode()
	if err != nil {
		t.Fatal(err)
	}
	gotAns, err := DecodeLeaseBatchAnswer(raw, lb)
	if err != nil || !reflect.DeepEqual(gotAns, ans) {
		t.Fatalf("answer round trip: %v\n%#v\n%#v", err, gotAns, ans)
	}
	if e := gotAns.Acks[1].Error.Err(); errs.Code(e) != errs.Conflict || errs.Field(e) != "phase" {
		t.Errorf("item error back: %v", e)
	}
}

// TestOfferBatchCarriesOffersByteForByte: the batch wraps each offer's own
// encoding; decoding checks each answers a distinct item, in order.
func TestOfferBatchCarriesOffersByteForByte(t *testing.T) {
	req := pullBatch(t, 3)
	var raws [][]byte
	for _, i := range []int{0, 2} {
		o := offer(t)
		o.SessionID, o.Generation, o.OfferID = req.SessionID, req.Generation, req.Pulls[i].OfferID
		o.LeaseTokenDigest = req.Pulls[i].LeaseToken.Digest()
		raw, err := o.Encode()
		if err != nil {
			t.Fatal(err)
		}
		raws = append(raws, raw)
	}
	raw, err := EncodeOfferBatch(raws)
	if err != nil {
		t.Fatal(err)
	}
	var wire struct {
		Offers []json.RawMessage `json:"offers"`
	}
	if err := json.Unmarshal(raw, &wire); err != nil || len(wire.Offers) != 2 || !bytes.Equal(wire.Offers[1], raws[1]) {
		t.Fatalf("the batch does not carry the offer's own bytes: %v", err)
	}
	offers, err := DecodeOfferBatch(raw, req)
	if err != nil || len(offers) != 2 || offers[1].OfferID != req.Pulls[2].OfferID {
		t.Fatalf("decode: %v %d", err, len(offers))
	}
	// Out of order: refused.
	swapped, err := EncodeOfferBatch([][]byte{raws[1], raws[0]})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := DecodeOfferBatch(swapped, req); errs.Code(err) != errs.Invalid {
		t.Errorf("out of order: %v, want invalid", err)
	}
	// An offer for a token this batch did not send: refused.
	other := req
	other.Pulls = append([]OfferPullItem(nil), req.Pulls...)
	other.Pulls[2].LeaseToken = pullBatch(t, 1).Pulls[0].LeaseToken
	if _, err := DecodeOfferBatch(raw, other); err == nil {
		t.Error("an offer bound to another token was accepted")
	}
}

func TestBatchRejections(t *testing.T) {
	big := pullBatch(t, MaxBatchItems)
	big.Pulls = append(big.Pulls, big.Pulls[0])
	dupToken := pullBatch(t, 2)
	dupToken.Pulls[1].LeaseToken = dupToken.Pulls[0].LeaseToken
	dupOffer := pullBatch(t, 2)
	dupOffer.Pulls[1].OfferID = dupOffer.Pulls[0].OfferID
	badItem := pullBatch(t, 2)
	badItem.Pulls[1].OfferID = "not-a-uuid"
	for _, tc := range []struct {
		name  string
		b     OfferPullBatch
		field string
	}{
		{"empty", OfferPullBatch{V: 1, SessionID: sessionID, Generation: 3}, "pulls"},
		{"too many", big, "pulls"},
		{"repeated token", dupToken, "pulls[1]"},
		{"repeated offer id", dupOffer, "pulls[1]"},
		{"bad item", badItem, "pulls[1].offerId"},
	} {
		if err := tc.b.Validate(); errs.Code(err) != errs.Invalid || errs.Field(err) != tc.field {
			t.Errorf("%s: %v, want invalid %s", tc.name, err, tc.field)
		}
	}
	for _, tc := range []struct {
		name, body, field string
	}{
		{"no items", `{"v":1}`, "acks"},
		{"unknown field", `{"v":1,"acks":[],"extra":1}`, ""},
		{"bad ack", `{"v":1,"acks":[{"v":1}]}`, "acks[0]."},
		{"wrong version", `{"v":2,"acks":[]}`, "v"},
	} {
		_, err := DecodeLeaseBatch([]byte(tc.body))
		if err == nil || errs.Code(err) == errs.Internal || !strings.HasPrefix(errs.Field(err), tc.field) {
			t.Errorf("%s: %v, want a refusal on %q", tc.name, err, tc.field)
		}
	}
	lb := leaseBatch()
	for i := range MaxBatchItems {
		_ = i
		lb.Completions = append(lb.Completions, completion())
	}
	if err := lb.Validate(); errs.Code(err) != errs.Invalid {
		t.Errorf("%d completions: %v, want invalid", len(lb.Completions), err)
	}
	// An answer that does not match its batch is refused.
	c := control()
	short := LeaseBatchAnswer{V: 1, Acks: []AckOutcome{{Control: &c}}}
	raw, err := short.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := DecodeLeaseBatchAnswer(raw, leaseBatch()); errs.Code(err) != errs.Invalid {
		t.Errorf("short answer: %v, want invalid", err)
	}
	both := LeaseBatchAnswer{V: 1, Acks: []AckOutcome{{Control: &c, Error: &ItemError{Code: errs.Conflict, Message: "x"}}}}
	if err := both.Validate(); errs.Code(err) != errs.Invalid {
		t.Errorf("control and error: %v, want invalid", err)
	}
}

// The batch decoders' fuzz targets: no panic, only coded refusals, and an
// accepted body re-encodes to one that decodes to the same value.
func FuzzDecodeOfferPullBatch(f *testing.F) {
	raw, err := pullBatch(f, 3).Encode()
	if err != nil {
		f.Fatal(err)
	}
	f.Add(raw)
	f.Add([]byte(`{"v":1,"sessionId":"s","generation":1,"pulls":[]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		b, err := DecodeOfferPullBatch(data)
		if err != nil {
			if errs.Code(err) == errs.Internal {
				t.Fatalf("uncoded error: %v", err)
			}
			return
		}
		again, err := b.Encode()
		if err != nil {
			t.Fatal(err)
		}
		if back, err := DecodeOfferPullBatch(again); err != nil || !reflect.DeepEqual(back, b) {
			t.Fatalf("decode∘encode: %v", err)
		}
	})
}

func FuzzDecodeLeaseBatch(f *testing.F) {
	raw, err := leaseBatch().Encode()
	if err != nil {
		f.Fatal(err)
	}
	f.Add(raw)
	f.Add([]byte(`{"v":1,"acks":[{"v":1}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		b, err := DecodeLeaseBatch(data)
		if err != nil {
			if errs.Code(err) == errs.Internal {
				t.Fatalf("uncoded error: %v", err)
			}
			return
		}
		again, err := b.Encode()
		if err != nil {
			t.Fatal(err)
		}
		if back, err := DecodeLeaseBatch(again); err != nil || !reflect.DeepEqual(back, b) {
			t.Fatalf("decode∘encode: %v", err)
		}
	})
}
