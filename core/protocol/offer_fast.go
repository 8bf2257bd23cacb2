package protocol

import (
	"errors"

	"github.com/ql3/ql3/core/canonjson"
	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/spec"
)

// decodeOfferFast is DecodeOffer's fast path: one pass of
// canonjson.Scanner over the offer, the spec read in place (spec.Scan), its
// canonical form and digest computed once, and the same validation as the
// reference. It covers every offer Offer.Encode produces. Any error —
// canonjson.ErrNotFast or a validation fault — sends DecodeOffer to the
// reference decoder for the verdict and the field path, so refusals are
// exactly the reference's; FuzzDecodeOfferFastPath checks that whatever
// this accepts the reference accepts with an equal value.
func decodeOfferFast(data []byte) (Offer, error) {
	var s canonjson.Scanner
	s.Reset(data, offerFastLimits)
	var (
		o                                     Offer
		tokenDigest, revisionDigest, specText string
		sum                                   canonjson.Digest
		specErr                               error
		haveSpec                              bool
	)
	if s.Object() {
		for key, ok := s.Key(); ok; key, ok = s.Key() {
			switch key {
			case "v":
				o.V = s.Int()
			case "runId":
				o.RunID = s.String()
			case "attemptId":
				o.AttemptID = s.String()
			case "attemptNumber":
				o.AttemptNumber = s.Int()
			case "workerId":
				o.WorkerID = s.String()
			case "sessionId":
				o.SessionID = s.String()
			case "generation":
				o.Generation = s.Int64()
			case "offerId":
				o.OfferID = s.String()
			case "leaseGeneration":
				o.LeaseGeneration = s.Int64()
			case "leaseVersion":
				o.LeaseVersion = s.Int64()
			case "leaseExpiresAtMs":
				o.LeaseExpiresAtMs = s.Int64()
			case "leaseTokenDigest":
				tokenDigest = s.String()
			case "taskId":
				o.TaskID = s.String()
			case "taskRevision":
				o.TaskRevision = s.Int64()
			case "scheduledForMs":
				o.ScheduledForMs = s.Int64()
			case "executionRevisionId":
				o.ExecutionRevisionID = s.String()
			case "executionRevisionDigest":
				revisionDigest = s.String()
			case "specDigest":
				specText = s.String()
			case "spec":
				o.Spec, sum, specErr = spec.Scan(&s)
				haveSpec = true
			case "timeoutMs":
				o.TimeoutMs = s.Int64()
			case "env":
				o.Env = scanEnv(&s)
			case "scriptTree":
				o.ScriptTree = s.String()
			case "projectId":
				o.ProjectID = s.String()
			default:
				s.Fail()
			}
		}
	}
	if err := s.Finish(); err != nil {
		return Offer{}, err
	}
	// The reference's order: version, digests, spec, then the rest.
	if err := checkVersion(o.V); err != nil {
		return Offer{}, err
	}
	var err error
	if o.LeaseTokenDigest, err = parseDigest("leaseTokenDigest", tokenDigest); err != nil {
		return Offer{}, err
	}
	if o.ExecutionRevisionDigest, err = parseDigest("executionRevisionDigest", revisionDigest); err != nil {
		return Offer{}, err
	}
	if o.SpecDigest, err = parseDigest("specDigest", specText); err != nil {
		return Offer{}, err
	}
	if !haveSpec {
		return Offer{}, errs.Invalidf("spec", "is required")
	}
	if errors.Is(specErr, canonjson.ErrNotFast) {
		return Offer{}, specErr
	}
	if specErr != nil {
		return Offer{}, errs.Prefix("spec", specErr)
	}
	if err := o.validateFields(); err != nil {
		return Offer{}, err
	}
	if err := o.validateAgainstSpec(sum); err != nil {
		return Offer{}, err
	}
	return o, nil
}
