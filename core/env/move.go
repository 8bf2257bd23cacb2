package env

import (
	"slices"

	"github.com/ql3/ql3/core/errs"
)

// PositionStep spaces the positions a store hands out, so most moves fit
// between two neighbours without renumbering.
const PositionStep = 1 << 16

// Slot is what ordering needs of an entry.
type Slot struct {
	ID          string
	Pinned      bool
	Position    int64
	CreatedAtMs int64
}

func (s Slot) entry() Entry {
	return Entry{ID: s.ID, Pinned: s.Pinned, Position: s.Position, CreatedAtMs: s.CreatedAtMs}
}

// NextPositions returns n positions for new entries that sort below every
// existing one (position desc), as QingLong appends them: a new account's
// cookie joins after the ones already there, and entries created (or
// imported) in one batch keep their order. lowest is the smallest existing
// position (0 for an empty store).
func NextPositions(lowest int64, n int) []int64 {
	out := make([]int64, n)
	for i := range out {
		out[i] = lowest - int64(i+1)*PositionStep
	}
	return out
}

// MoveBefore places the entry id directly before the entry before in the
// list order (Compare), or last when before is "". The moved entry keeps
// its pinned state, so it lands at the edge of its group when before is in
// the other one. It returns the positions to write: usually one, every
// entry of the group when there was no room between the neighbours.
func MoveBefore(slots []Slot, id, before string) (map[string]int64, error) {
	if id == before {
		return nil, errs.Invalidf("before", "an entry cannot move before itself")
	}
	list := slices.Clone(slots)
	slices.SortFunc(list, func(a, b Slot) int { return Compare(a.entry(), b.entry()) })
	from := slices.IndexFunc(list, func(s Slot) bool { return s.ID == id })
	if from < 0 {
		return nil, errs.NotFoundf("env entry %s not found", id)
	}
	moved := list[from]
	list = slices.Delete(list, from, from+1)
	to := len(list)
	if before != "" {
		to = slices.IndexFunc(list, func(s Slot) bool { return s.ID == before })
		if to < 0 {
			return nil, errs.E(errs.Invalid, "before", "env entry %s not found", before)
		}
	}
	// The group of the moved entry: pinned ones sort first.
	lo := slices.IndexFunc(list, func(s Slot) bool { return s.Pinned == moved.Pinned })
	if lo < 0 {
		lo = 0
		if !moved.Pinned {
			lo = len(list)
		}
	}
	hi := lo
	for hi < len(list) && list[hi].Pinned == moved.Pinned {
		hi++
	}
	to = min(max(to, lo), hi)
	list = slices.Insert(list, to, moved)
	hi++
	// Room between the neighbours in the group (positions descend)?
	var above, below *Slot
	if to > lo {
		above = &list[to-1]
	}
	if to+1 < hi {
		below = &list[to+1]
	}
	switch {
	case above == nil && below == nil:
		return map[string]int64{id: moved.Position}, nil
	case above == nil:
		return map[string]int64{id: below.Position + PositionStep}, nil
	case below == nil:
		return map[string]int64{id: above.Position - PositionStep}, nil
	case above.Position-below.Position >= 2:
		return map[string]int64{id: below.Position + (above.Position-below.Position)/2}, nil
	}
	out := make(map[string]int64, hi-lo)
	for i := lo; i < hi; i++ {
		out[list[i].ID] = int64(hi-i) * PositionStep
	}
	return out, nil
}
