package controlplane

import (
	"bytes"
	"testing"

	"github.com/google/uuid"
)

// TestLaneRunIDLayout: a replica's run ids share its lane prefix, order by
// time within it, are RFC 9562 version 8 ids, and differ in their random
// part.
func TestLaneRunIDLayout(t *testing.T) {
	const at = int64(1_796_000_000_123)
	a1, err := laneRunID("replica-a", at)
	if err != nil {
		t.Fatal(err)
	}
	a2, _ := laneRunID("replica-a", at+1000)
	a3, _ := laneRunID("replica-a", at)
	b1, _ := laneRunID("replica-b", at)
	for _, id := range []uuid.UUID{a1, a2, a3, b1} {
		if id.Version() != 8 || id.Variant() != uuid.RFC4122 {
			t.Fatalf("%s: version %d, variant %v", id, id.Version(), id.Variant())
		}
		if _, err := uuid.Parse(id.String()); err != nil {
			t.Fatal(err)
		}
	}
	if !bytes.Equal(a1[:2], a2[:2]) || bytes.Equal(a1[:2], b1[:2]) {
		t.Fatalf("lanes: a %x %x, b %x", a1[:2], a2[:2], b1[:2])
	}
	if bytes.Compare(a1[:], a2[:]) >= 0 {
		t.Fatalf("a later second must sort after: %s, %s", a1, a2)
	}
	if a1 == a3 {
		t.Fatal("two ids of the same second are equal")
	}
}
