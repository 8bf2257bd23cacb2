package protocol

import (
	"bytes"
	"encoding/json"

	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/notify/channel"
)

// A script's sendNotify on a remote worker (ADR 0046, ADR 0053). The
// worker's loopback relay takes the script's POST body ({title, content})
// and sends it here verbatim as Message, under the attempt's lease
// (LeaseRef) — the worker decodes nothing of it (its binary has no room
// to spare); the control plane decodes it strictly (DecodeMessage) and
// queues it for the channels of the task's rules of kind "script" while
// the lease is live, and refuses it once the attempt is over or for any
// other Run. Seq numbers the attempt's calls (1, 2, …); it is part of
// each row's idempotency key, so a relay that resends a call whose answer
// was lost queues nothing twice.
const (
	PathNotifySend = "/v1/notify/send" // NotifySendRequest → NotifySendReceipt

	// MaxNotifyBodyBytes bounds the script's body (Message): a title and
	// content within channel.MaxTitleBytes / MaxContentBytes, JSON-escaped.
	MaxNotifyBodyBytes = 96 << 10
	// MaxNotifySendBytes bounds a request (Message escaped once more).
	MaxNotifySendBytes = 256 << 10
	// MaxNotifySeq bounds an attempt's call number.
	MaxNotifySeq = 1 << 30
)

// NotifySendRequest is one sendNotify(title, content) call.
type NotifySendRequest struct {
	V int `json:"v"`
	LeaseRef
	Seq     int64  `json:"seq"`
	Message string `json:"message"` // the script's JSON body
}

// Validate checks every field.
func (q NotifySendRequest) Validate() error {
	if err := checkVersion(q.V); err != nil {
		return err
	}
	if err := checkRange("seq", q.Seq, 1, MaxNotifySeq); err != nil {
		return err
	}
	if len(q.Message) > MaxNotifyBodyBytes {
		return errs.TooLargef("body", "is %d bytes, limit is %d", len(q.Message), MaxNotifyBodyBytes)
	}
	return q.LeaseRef.Validate()
}

// DecodeMessage strictly decodes Message, one JSON object {"title":
// string, "content": string}, within channel.CheckMessage's bounds (the
// edge's endpoint's).
func (q NotifySendRequest) DecodeMessage() (channel.Message, error) {
	var m struct {
		Title   string `json:"title"`
		Content string `json:"content"`
	}
	dec := json.NewDecoder(bytes.NewReader([]byte(q.Message)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil || dec.More() {
		return channel.Message{}, errs.Invalidf("body", `must be one JSON object {"title": string, "content": string}`)
	}
	msg := channel.Message{Title: m.Title, Content: m.Content}
	return msg, channel.CheckMessage(msg)
}

// Encode validates q (with v set) and returns its JSON.
func (q NotifySendRequest) Encode() ([]byte, error) {
	q.V = Version
	if err := q.Validate(); err != nil {
		return nil, err
	}
	return encode(q, MaxNotifySendBytes, "notify request")
}

// DecodeNotifySendRequest strictly decodes and validates a request.
func DecodeNotifySendRequest(data []byte) (NotifySendRequest, error) {
	var q NotifySendRequest
	if err := decode(data, limits(MaxNotifySendBytes, 1, 32, MaxNotifySendBytes), &q, &q.V); err != nil {
		return NotifySendRequest{}, err
	}
	return q, q.Validate()
}

// NotifySendReceipt says how many channels the call was queued for (0:
// no rule of kind "script" matches the task).
type NotifySendReceipt struct {
	V      int `json:"v"`
	Queued int `json:"queued"`
}

// Validate checks every field.
func (r NotifySendReceipt) Validate() error {
	if err := checkVersion(r.V); err != nil {
		return err
	}
	if r.Queued < 0 || r.Queued > 4096 {
		return errs.Invalidf("queued", "must be 0..4096, got %d", r.Queued)
	}
	return nil
}

// Encode validates r (with v set) and returns its JSON.
func (r NotifySendReceipt) Encode() ([]byte, error) {
	r.V = Version
	if err := r.Validate(); err != nil {
		return nil, err
	}
	return encode(r, DefaultBodyBytes, "notify receipt")
}

// DecodeNotifySendReceipt strictly decodes and validates a receipt.
func DecodeNotifySendReceipt(data []byte) (NotifySendReceipt, error) {
	var r NotifySendReceipt
	if err := decode(data, flat, &r, &r.V); err != nil {
		return NotifySendReceipt{}, err
	}
	return r, r.Validate()
}
