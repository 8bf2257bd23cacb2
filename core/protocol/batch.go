package protocol

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/fence"
)

// Batches (ADR 0058, amending ADR 0004). A batch is an envelope around the
// per-offer bodies, never a change to them: a batched pull answers with
// offers that are byte for byte the single-pull offers, and a lease batch
// carries Acks and Completions exactly as their own routes take them. Each
// item keeps its own fence, replay and answer; the authority writes what it
// can of a batch in one transaction.

// MaxBatchItems bounds the items of one batch (pulls, or acks plus
// completions each): a session with more free slots sends several batches.
const MaxBatchItems = 16

// Routes of the batch envelopes.
const (
	PathOfferPullBatch = "/v1/offers/pull-batch" // OfferPullBatch → 200 OfferBatch | 204 no offer
	PathLeaseBatch     = "/v1/leases/batch"      // LeaseBatch → LeaseBatchAnswer
)

// Batch body limits. A request stays within the hard body limit of the
// ingress (a lease batch's items are ~0.7 KiB each, so 32 of them take
// ~24 KiB; Encode refuses a batch above the limit with too_large and the
// sender splits it); the offer batch, an answer, holds up to one full
// offer per item, its pinned env included (MaxOfferBodyBytes: a reader
// bounds by it, the worker's single pull does today).
const (
	MaxOfferPullBatchBytes   = DefaultBodyBytes + MaxBatchItems*256
	MaxOfferBatchBytes       = DefaultBodyBytes + MaxBatchItems*MaxOfferBodyBytes
	MaxLeaseBatchBytes       = HardBodyBytes
	MaxLeaseBatchAnswerBytes = HardBodyBytes
)

// OfferPullItem is one offer the worker asks for: its own offer id and a
// fresh lease token, as in an OfferPullRequest.
type OfferPullItem struct {
	OfferID    string           `json:"offerId"`
	LeaseToken fence.LeaseToken `json:"leaseToken"`
}

// OfferPullBatch asks for up to len(Pulls) offers for one session
// (PathOfferPullBatch). Each item is answered as the OfferPullRequest
// Request(i) would be: the offers are claimed in item order, a lost
// response is recovered by repeating the identical batch (each claimed
// item's offer is rebuilt from its durable lease), and an item without an
// offer in the answer claimed nothing (its token is never used again).
type OfferPullBatch struct {
	V          int             `json:"v"`
	SessionID  string          `json:"sessionId"`
	Generation int64           `json:"generation"`
	Pulls      []OfferPullItem `json:"pulls"`
}

var pullBatchLimits = limits(MaxOfferPullBatchBytes, 3, 32, 256)

// DecodeOfferPullBatch strictly decodes and validates a batched pull.
func DecodeOfferPullBatch(data []byte) (OfferPullBatch, error) {
	var b OfferPullBatch
	if err := decode(data, pullBatchLimits, &b, &b.V); err != nil {
		return OfferPullBatch{}, err
	}
	if err := b.Validate(); err != nil {
		return OfferPullBatch{}, err
	}
	return b, nil
}

// Request returns item i as a single pull request.
func (b OfferPullBatch) Request(i int) OfferPullRequest {
	return OfferPullRequest{V: Version, SessionID: b.SessionID, Generation: b.Generation,
		OfferID: b.Pulls[i].OfferID, LeaseToken: b.Pulls[i].LeaseToken}
}

// Validate checks every field; offer ids and tokens are distinct.
func (b OfferPullBatch) Validate() error {
	if err := checkVersion(b.V); err != nil {
		return err
	}
	if len(b.Pulls) == 0 || len(b.Pulls) > MaxBatchItems {
		return errs.Invalidf("pulls", "must hold 1 to %d items, got %d", MaxBatchItems, len(b.Pulls))
	}
	offers := make(map[string]bool, len(b.Pulls))
	tokens := make(map[[32]byte]bool, len(b.Pulls))
	for i := range b.Pulls {
		if err := itemField("pulls", i, b.Request(i).Validate()); err != nil {
			return err
		}
		d := b.Pulls[i].LeaseToken.Digest()
		if offers[b.Pulls[i].OfferID] || tokens[d] {
			return errs.Invalidf(fmt.Sprintf("pulls[%d]", i), "offer id and lease token must differ from the other items'")
		}
		offers[b.Pulls[i].OfferID], tokens[d] = true, true
	}
	return nil
}

// Encode validates b (with v set) and returns its JSON.
func (b OfferPullBatch) Encode() ([]byte, error) {
	b.V = Version
	if err := b.Validate(); err != nil {
		return nil, err
	}
	return encode(b, MaxOfferPullBatchBytes, "offer pull batch")
}

// OfferBatch answers a batched pull: the claimed offers in item order,
// each the exact bytes Offer.Encode gives (so a replayed item is
// byte-identical to its first answer, as a single pull's offer is).
type OfferBatch struct {
	V      int               `json:"v"`
	Offers []json.RawMessage `json:"offers"`
}

var offerBatchLimits = limits(MaxOfferBatchBytes, offerEnvLimits.MaxDepth+2, offerEnvLimits.MaxEntries, offerEnvLimits.MaxString)

// EncodeOfferBatch wraps encoded offers (Offer.Encode) in a batch.
func EncodeOfferBatch(offers [][]byte) ([]byte, error) {
	if len(offers) == 0 || len(offers) > MaxBatchItems {
		return nil, errs.Invalidf("offers", "must hold 1 to %d items, got %d", MaxBatchItems, len(offers))
	}
	b := OfferBatch{V: Version, Offers: make([]json.RawMessage, len(offers))}
	for i, o := range offers {
		b.Offers[i] = o
	}
	return encode(b, MaxOfferBatchBytes, "offer batch")
}

// DecodeOfferBatch strictly decodes a batch answer and each offer in it
// (DecodeOffer: spec, digest and limits), and checks that every offer
// answers a distinct item of req (Offer.AnswersPull), in item order.
func DecodeOfferBatch(data []byte, req OfferPullBatch) ([]Offer, error) {
	var b OfferBatch
	if err := decode(data, offerBatchLimits, &b, &b.V); err != nil {
		return nil, err
	}
	if len(b.Offers) == 0 || len(b.Offers) > len(req.Pulls) {
		return nil, errs.Invalidf("offers", "must hold 1 to %d items, got %d", len(req.Pulls), len(b.Offers))
	}
	out := make([]Offer, 0, len(b.Offers))
	next := 0
	for i, raw := range b.Offers {
		o, err := DecodeOffer(raw)
		if err != nil {
			return nil, itemField("offers", i, err)
		}
		for next < len(req.Pulls) && req.Pulls[next].OfferID != o.OfferID {
			next++
		}
		if next == len(req.Pulls) {
			return nil, errs.Invalidf(fmt.Sprintf("offers[%d].offerId", i), "answers no pull of the batch, or out of order")
		}
		if err := o.AnswersPull(req.Request(next)); err != nil {
			return nil, itemField("offers", i, err)
		}
		next++
		out = append(out, o)
	}
	return out, nil
}

// LeaseBatch carries Acks and Completions of one worker (PathLeaseBatch).
// The authority answers every ack, in order, then every completion, in
// order; so a running Ack and the Completion of the same attempt may
// travel together (the running transition rides the completion). Each item
// is answered exactly as its own route answers it.
type LeaseBatch struct {
	V           int          `json:"v"`
	Acks        []Ack        `json:"acks,omitempty"`
	Completions []Completion `json:"completions,omitempty"`
}

type leaseBatchWire struct {
	V           int               `json:"v"`
	Acks        []json.RawMessage `json:"acks"`
	Completions []json.RawMessage `json:"completions"`
}

var leaseBatchLimits = limits(MaxLeaseBatchBytes, 3, 32, 256)

// DecodeLeaseBatch strictly decodes a lease batch, each item with its own
// decoder (DecodeAck, DecodeCompletion).
func DecodeLeaseBatch(data []byte) (LeaseBatch, error) {
	var w leaseBatchWire
	if err := decode(data, leaseBatchLimits, &w, &w.V); err != nil {
		return LeaseBatch{}, err
	}
	b := LeaseBatch{V: w.V}
	for i, raw := range w.Acks {
		a, err := DecodeAck(raw)
		if err != nil {
			return LeaseBatch{}, itemField("acks", i, err)
		}
		b.Acks = append(b.Acks, a)
	}
	for i, raw := range w.Completions {
		c, err := DecodeCompletion(raw)
		if err != nil {
			return LeaseBatch{}, itemField("completions", i, err)
		}
		b.Completions = append(b.Completions, c)
	}
	if err := b.Validate(); err != nil {
		return LeaseBatch{}, err
	}
	return b, nil
}

// Validate checks the envelope and every item.
func (b LeaseBatch) Validate() error {
	if err := checkVersion(b.V); err != nil {
		return err
	}
	if n := len(b.Acks) + len(b.Completions); n == 0 || len(b.Acks) > MaxBatchItems || len(b.Completions) > MaxBatchItems {
		return errs.Invalidf("acks", "a batch holds 1 to %d acks and up to %d completions, got %d and %d",
			MaxBatchItems, MaxBatchItems, len(b.Acks), len(b.Completions))
	}
	for i, a := range b.Acks {
		if err := itemField("acks", i, a.Validate()); err != nil {
			return err
		}
	}
	for i, c := range b.Completions {
		if err := itemField("completions", i, c.Validate()); err != nil {
			return err
		}
	}
	return nil
}

// Encode validates b (with v and every item's v set) and returns its JSON.
func (b LeaseBatch) Encode() ([]byte, error) {
	b.V = Version
	b.Acks = append([]Ack(nil), b.Acks...)
	for i := range b.Acks {
		b.Acks[i].V = Version
	}
	b.Completions = append([]Completion(nil), b.Completions...)
	for i := range b.Completions {
		b.Completions[i].V = Version
	}
	if err := b.Validate(); err != nil {
		return nil, err
	}
	return encode(b, MaxLeaseBatchBytes, "lease batch")
}

// ItemError is a per-item refusal inside a batch answer: the code
// (conflict, invalid, not_found, too_large) and field its own route would
// have answered. A failure of the authority (unavailable, internal) fails
// the whole batch instead, and the worker repeats it.
type ItemError struct {
	Code    string `json:"code"`
	Field   string `json:"field,omitempty"`
	Message string `json:"message"`
}

// Err turns the item error back into an *errs.Error.
func (e *ItemError) Err() error { return &errs.Error{Code: e.Code, Field: e.Field, Message: e.Message} }

// NewItemError describes err for a batch answer.
func NewItemError(err error) *ItemError {
	var e *errs.Error
	if errors.As(err, &e) {
		return &ItemError{Code: e.Code, Field: e.Field, Message: e.Message}
	}
	return &ItemError{Code: errs.Internal, Message: err.Error()}
}

// AckOutcome answers one ack: its control, or its refusal.
type AckOutcome struct {
	Control *LeaseControl `json:"control,omitempty"`
	Error   *ItemError    `json:"error,omitempty"`
}

// CompletionOutcome answers one completion: its receipt, or its refusal.
type CompletionOutcome struct {
	Receipt *CompletionReceipt `json:"receipt,omitempty"`
	Error   *ItemError         `json:"error,omitempty"`
}

// LeaseBatchAnswer answers a LeaseBatch item by item, in the same order.
type LeaseBatchAnswer struct {
	V           int                 `json:"v"`
	Acks        []AckOutcome        `json:"acks"`
	Completions []CompletionOutcome `json:"completions"`
}

var leaseAnswerLimits = limits(MaxLeaseBatchAnswerBytes, 4, 32, 512)

// Validate checks that every outcome holds exactly one of its answer and
// its error, and every answer is valid.
func (a LeaseBatchAnswer) Validate() error {
	if err := checkVersion(a.V); err != nil {
		return err
	}
	if len(a.Acks) > MaxBatchItems || len(a.Completions) > MaxBatchItems {
		return errs.Invalidf("acks", "at most %d acks and %d completions", MaxBatchItems, MaxBatchItems)
	}
	for i, o := range a.Acks {
		if (o.Control == nil) == (o.Error == nil) {
			return errs.Invalidf(fmt.Sprintf("acks[%d]", i), "needs exactly one of control and error")
		}
		if o.Control != nil {
			if err := itemField("acks", i, o.Control.Validate()); err != nil {
				return err
			}
		}
	}
	for i, o := range a.Completions {
		if (o.Receipt == nil) == (o.Error == nil) {
			return errs.Invalidf(fmt.Sprintf("completions[%d]", i), "needs exactly one of receipt and error")
		}
		if o.Receipt != nil {
			if err := itemField("completions", i, o.Receipt.Validate()); err != nil {
				return err
			}
		}
	}
	return nil
}

// Encode validates a (with v set) and returns its JSON.
func (a LeaseBatchAnswer) Encode() ([]byte, error) {
	a.V = Version
	if err := a.Validate(); err != nil {
		return nil, err
	}
	return encode(a, MaxLeaseBatchAnswerBytes, "lease batch answer")
}

// DecodeLeaseBatchAnswer strictly decodes an answer to req: one outcome
// per item, in order.
func DecodeLeaseBatchAnswer(data []byte, req LeaseBatch) (LeaseBatchAnswer, error) {
	var a LeaseBatchAnswer
	if err := decode(data, leaseAnswerLimits, &a, &a.V); err != nil {
		return LeaseBatchAnswer{}, err
	}
	if err := a.Validate(); err != nil {
		return LeaseBatchAnswer{}, err
	}
	if len(a.Acks) != len(req.Acks) || len(a.Completions) != len(req.Completions) {
		return LeaseBatchAnswer{}, errs.Invalidf("acks", "answers %d acks and %d completions, the batch had %d and %d",
			len(a.Acks), len(a.Completions), len(req.Acks), len(req.Completions))
	}
	for i, o := range a.Completions {
		if o.Receipt != nil && o.Receipt.AttemptID != req.Completions[i].AttemptID {
			return LeaseBatchAnswer{}, errs.Invalidf(fmt.Sprintf("completions[%d].attemptId", i), "answers another attempt")
		}
	}
	for i, o := range a.Acks {
		if o.Control != nil && o.Control.AttemptID != req.Acks[i].AttemptID {
			return LeaseBatchAnswer{}, errs.Invalidf(fmt.Sprintf("acks[%d].attemptId", i), "answers another attempt")
		}
	}
	return a, nil
}

// itemField prefixes the field of err with the item's path (pulls[2].offerId).
func itemField(list string, i int, err error) error {
	if err == nil {
		return nil
	}
	var e *errs.Error
	if !errors.As(err, &e) {
		return err
	}
	c := *e
	if c.Field == "" {
		c.Field = fmt.Sprintf("%s[%d]", list, i)
	} else {
		c.Field = fmt.Sprintf("%s[%d].%s", list, i, c.Field)
	}
	return &c
}
