package fakeingress

import (
	"time"

	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/protocol"
)

// leaseBatch answers a LeaseBatch item by item through the single routes'
// handlers (acks, then completions), as the authority does (ADR 0058).
func (s *Server) leaseBatch(body []byte, now time.Time) (int, []byte, map[string]string) {
	b, err := protocol.DecodeLeaseBatch(body)
	if err != nil {
		return 400, errBody("invalid"), nil
	}
	ans := protocol.LeaseBatchAnswer{Acks: make([]protocol.AckOutcome, len(b.Acks)),
		Completions: make([]protocol.CompletionOutcome, len(b.Completions))}
	for i, a := range b.Acks {
		raw, err := a.Encode()
		if err != nil {
			return 400, errBody("invalid"), nil
		}
		status, out, _ := s.route(protocol.PathLeaseAck, raw, now)
		if status != 200 {
			ans.Acks[i].Error = &protocol.ItemError{Code: errs.Conflict, Message: "lease not held"}
			continue
		}
		c, err := protocol.DecodeLeaseControl(out)
		if err != nil {
			s.T.Errorf("fake: own control: %v", err)
		}
		ans.Acks[i].Control = &c
	}
	for i, c := range b.Completions {
		raw, err := c.Encode()
		if err != nil {
			return 400, errBody("invalid"), nil
		}
		status, out, _ := s.route(protocol.PathLeaseComplete, raw, now)
		if status != 200 {
			ans.Completions[i].Error = &protocol.ItemError{Code: errs.Conflict, Message: "lease not held"}
			continue
		}
		r, err := protocol.DecodeCompletionReceipt(out)
		if err != nil {
			s.T.Errorf("fake: own receipt: %v", err)
		}
		ans.Completions[i].Receipt = &r
	}
	out, err := ans.Encode()
	if err != nil {
		s.T.Errorf("fake: encode batch answer: %v", err)
	}
	return 200, out, nil
}
