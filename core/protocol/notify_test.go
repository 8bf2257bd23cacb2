package protocol

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/notify/channel"
)

func notifyRequest() NotifySendRequest {
	return NotifySendRequest{V: Version, LeaseRef: leaseRef(), Seq: 1, Message: `{"title":"t","content":"c \"quoted\" <b>\u4e2d</b>"}`}
}

func TestNotifySendRoundTrip(t *testing.T) {
	raw, err := notifyRequest().Encode()
	if err != nil {
		t.Fatal(err)
	}
	back, err := DecodeNotifySendRequest(raw)
	if err != nil || !reflect.DeepEqual(back, notifyRequest()) {
		t.Fatalf("round trip: %+v, %v", back, err)
	}
	m, err := back.DecodeMessage()
	if err != nil || m.Title != "t" || m.Content != `c "quoted" <b>中</b>` {
		t.Fatalf("message: %+v, %v", m, err)
	}
	rc, err := NotifySendReceipt{Queued: 2}.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if r, err := DecodeNotifySendReceipt(rc); err != nil || r.Queued != 2 {
		t.Fatalf("receipt: %+v, %v", r, err)
	}
}

// jsonMessage is what the shipped modules send.
func jsonMessage(t *testing.T, title, content string) string {
	b, err := json.Marshal(map[string]string{"title": title, "content": content})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestNotifySendRefusals(t *testing.T) {
	// The largest message the modules can send, all of it escaped by
	// Python's json.dumps (\uXXXX), still fits.
	worst := NotifySendRequest{LeaseRef: leaseRef(), Seq: 1, Message: strings.ReplaceAll(jsonMessage(t,
		strings.Repeat("中", channel.MaxTitleBytes/3), strings.Repeat("中", channel.MaxContentBytes/3)), "中", `\u4e2d`)}
	raw, err := worst.Encode()
	if err != nil {
		t.Fatalf("the largest message does not encode: %v", err)
	}
	if q, err := DecodeNotifySendRequest(raw); err != nil {
		t.Fatalf("the largest message is refused: %v", err)
	} else if _, err := q.DecodeMessage(); err != nil {
		t.Fatalf("the largest message does not decode: %v", err)
	}
	for name, c := range map[string]struct {
		mut   func(*NotifySendRequest)
		field string
		code  string
	}{
		"title too long": {func(q *NotifySendRequest) {
			q.Message = jsonMessage(t, strings.Repeat("x", channel.MaxTitleBytes+1), "")
		}, "title", errs.TooLarge},
		"content too long": {func(q *NotifySendRequest) {
			q.Message = jsonMessage(t, "t", strings.Repeat("x", channel.MaxContentBytes+1))
		}, "content", errs.TooLarge},
		"empty message":  {func(q *NotifySendRequest) { q.Message = `{"title":"","content":""}` }, "title", errs.Invalid},
		"unknown field":  {func(q *NotifySendRequest) { q.Message = `{"title":"t","extra":1}` }, "body", errs.Invalid},
		"not an object":  {func(q *NotifySendRequest) { q.Message = `["t"]` }, "body", errs.Invalid},
		"two objects":    {func(q *NotifySendRequest) { q.Message = `{"title":"t"}{"title":"u"}` }, "body", errs.Invalid},
		"body too large": {func(q *NotifySendRequest) { q.Message = strings.Repeat(" ", MaxNotifyBodyBytes+1) }, "body", errs.TooLarge},
		"seq zero":       {func(q *NotifySendRequest) { q.Seq = 0 }, "seq", errs.Invalid},
		"seq too large":  {func(q *NotifySendRequest) { q.Seq = MaxNotifySeq + 1 }, "seq", errs.Invalid},
		"no lease":       {func(q *NotifySendRequest) { q.LeaseRef = LeaseRef{} }, "sessionId", errs.Invalid},
	} {
		t.Run(name, func(t *testing.T) {
			q := notifyRequest()
			c.mut(&q)
			err := q.Validate()
			if err == nil {
				_, err = q.DecodeMessage()
			}
			var e *errs.Error
			if errs.Code(err) != c.code || !errors.As(err, &e) || e.Field != c.field {
				t.Fatalf("got %v (want %s on %s)", err, c.code, c.field)
			}
		})
	}
	raw, _ = notifyRequest().Encode()
	unknown := strings.Replace(string(raw), `{"v":1,`, `{"v":1,"extra":1,`, 1)
	if _, err := DecodeNotifySendRequest([]byte(unknown)); errs.Code(err) != errs.Invalid {
		t.Fatalf("unknown field accepted: %v", err)
	}
}

func FuzzDecodeNotifySendRequest(f *testing.F) {
	raw, _ := notifyRequest().Encode()
	f.Add(raw)
	f.Add([]byte(`{"v":1,"seq":1}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		q, err := DecodeNotifySendRequest(data)
		if err != nil {
			if errs.Code(err) == errs.Internal {
				t.Fatalf("uncoded error: %v", err)
			}
			return
		}
		if q.Seq < 1 || len(q.Message) > MaxNotifyBodyBytes {
			t.Fatalf("accepted %+v", q)
		}
		if m, err := q.DecodeMessage(); err == nil && (len(m.Title) > channel.MaxTitleBytes || len(m.Content) > channel.MaxContentBytes) {
			t.Fatalf("accepted message %+v", m)
		} else if err != nil && errs.Code(err) == errs.Internal {
			t.Fatalf("uncoded error: %v", err)
		}
		again, err := q.Encode()
		if err != nil {
			t.Fatalf("accepted request does not re-encode: %v", err)
		}
		if back, err := DecodeNotifySendRequest(again); err != nil || !reflect.DeepEqual(back, q) {
			t.Fatalf("decode∘encode changed the request: %v", err)
		}
	})
}
