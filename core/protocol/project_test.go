package protocol

import (
	"testing"

	"github.com/ql3/ql3/core/errs"
)

// TestOfferNamesItsProject: the project id survives both decoders, is
// optional (an older authority's offer) and must be a UUID when present.
func TestOfferNamesItsProject(t *testing.T) {
	o := offer(t)
	o.ProjectID = "0190b6a4-2b8e-7c3d-9a1f-3e5d7c9b1a2f"
	data, err := o.Encode()
	if err != nil {
		t.Fatal(err)
	}
	for name, dec := range map[string]func([]byte) (Offer, error){"fast": decodeOfferFast, "reference": decodeOfferReference} {
		if got, err := dec(data); err != nil || got.ProjectID != o.ProjectID {
			t.Errorf("%s: %q %v", name, got.ProjectID, err)
		}
	}
	o.ProjectID = ""
	if data, err = o.Encode(); err != nil {
		t.Fatal(err)
	}
	if got, err := DecodeOffer(data); err != nil || got.ProjectID != "" {
		t.Errorf("without a project: %+v %v", got.ProjectID, err)
	}
	o.ProjectID = "not-a-uuid"
	if _, err := o.Encode(); errs.Field(err) != "projectId" {
		t.Errorf("a bad project id: %v", err)
	}
}
