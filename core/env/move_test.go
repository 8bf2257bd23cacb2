package env

import (
	"slices"
	"testing"
)

// order applies moves to slots and returns the ids in list order.
func order(slots []Slot, moves map[string]int64) []string {
	out := slices.Clone(slots)
	for i := range out {
		if p, ok := moves[out[i].ID]; ok {
			out[i].Position = p
		}
	}
	slices.SortFunc(out, func(a, b Slot) int { return Compare(a.entry(), b.entry()) })
	ids := make([]string, len(out))
	for i, s := range out {
		ids[i] = s.ID
	}
	return ids
}

func TestMoveBefore(t *testing.T) {
	spaced := []Slot{{ID: "p", Pinned: true, Position: 0}, {ID: "a", Position: 3 * PositionStep}, {ID: "b", Position: 2 * PositionStep}, {ID: "c", Position: PositionStep}}
	tight := []Slot{{ID: "a", Position: 3}, {ID: "b", Position: 2}, {ID: "c", Position: 1}}
	cases := []struct {
		name       string
		slots      []Slot
		id, before string
		want       []string
		renumber   bool
	}{
		{"to the top of its group", spaced, "c", "a", []string{"p", "c", "a", "b"}, false},
		{"between", spaced, "a", "c", []string{"p", "b", "a", "c"}, false},
		{"last", spaced, "a", "", []string{"p", "b", "c", "a"}, false},
		{"before a pinned one stays below the pinned", spaced, "c", "p", []string{"p", "c", "a", "b"}, false},
		{"no room renumbers", tight, "c", "b", []string{"a", "c", "b"}, true},
	}
	for _, tc := range cases {
		moves, err := MoveBefore(tc.slots, tc.id, tc.before)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got := order(tc.slots, moves); !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
		if (len(moves) > 1) != tc.renumber {
			t.Errorf("%s: %d positions written", tc.name, len(moves))
		}
	}
	if _, err := MoveBefore(spaced, "a", "a"); err == nil {
		t.Error("before itself")
	}
	if _, err := MoveBefore(spaced, "zz", ""); err == nil {
		t.Error("unknown id")
	}
	if _, err := MoveBefore(spaced, "a", "zz"); err == nil {
		t.Error("unknown before")
	}
}

func TestNextPositions(t *testing.T) {
	p := NextPositions(10, 3)
	if !(p[0] > p[1] && p[1] > p[2] && p[0] < 10) {
		t.Fatalf("%v", p)
	}
}
