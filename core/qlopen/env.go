package qlopen

import (
	"strings"

	"github.com/ql3/ql3/core/env"
	"github.com/ql3/ql3/core/errs"
)

// Env is QingLong's env row (back/data/env.ts) as the Open API shows it.
// status 0 is enabled, 1 disabled. Value is present where QingLong
// returns it: the list and one entry (audited reads) and the answers to
// create and update (the app sent the value).
type Env struct {
	ID        int64    `json:"id"`
	Name      string   `json:"name"`
	Value     *string  `json:"value,omitempty"`
	Remarks   string   `json:"remarks"`
	Status    int      `json:"status"`
	Position  int64    `json:"position"`
	IsPinned  int      `json:"isPinned"`
	Labels    []string `json:"labels"`
	Timestamp string   `json:"timestamp"`
	CreatedAt string   `json:"createdAt"`
	UpdatedAt string   `json:"updatedAt"`
}

// EnvInput is one element of POST /open/envs and the body of PUT.
type EnvInput struct {
	ID      int64    `json:"id,omitempty"`
	Name    string   `json:"name"`
	Value   string   `json:"value"`
	Remarks *string  `json:"remarks"`
	Labels  []string `json:"labels"`
}

// Move is the body of PUT /open/envs/{id}/move.
type Move struct {
	FromIndex *int `json:"fromIndex"`
	ToIndex   *int `json:"toIndex"`
}

// Rename is the body of PUT /open/envs/name.
type Rename struct {
	IDs  []int64 `json:"ids"`
	Name string  `json:"name"`
}

// EnvOf makes the row of an env entry numbered num; the value only when
// withValue (an audited read).
func EnvOf(e env.Entry, num int64, withValue bool) Env {
	v := Env{ID: num, Name: e.Name, Remarks: e.Remarks, Position: e.Position, Labels: e.Labels,
		Timestamp: Stamp(e.UpdatedAtMs), CreatedAt: Time(e.CreatedAtMs), UpdatedAt: Time(e.UpdatedAtMs)}
	if !e.Enabled {
		v.Status = 1
	}
	if e.Pinned {
		v.IsPinned = 1
	}
	if v.Labels == nil {
		v.Labels = []string{}
	}
	if withValue {
		val := e.Value
		v.Value = &val
	}
	return v
}

// EnvMatches is QingLong's searchValue on envs: name, value or remarks
// holds q (lower case), case-insensitively.
func EnvMatches(e env.Entry, q string) bool {
	return q == "" || strings.Contains(strings.ToLower(e.Name), q) || strings.Contains(strings.ToLower(e.Value), q) ||
		strings.Contains(strings.ToLower(e.Remarks), q)
}

// MaxEnvSearch bounds searchValue on envs, in bytes.
const MaxEnvSearch = 256

// MoveTarget turns QingLong's drag-and-drop move (the entry at fromIndex
// of the list goes to toIndex) into ql3's "before" (env.MoveBefore): the
// entry now at toIndex when moving up, the one after it when moving down
// ("" → last). stay is true when nothing moves. list is the project's
// entries in list order; id must be at fromIndex.
func MoveTarget(list []env.Entry, id string, m Move) (before string, stay bool, err error) {
	if m.FromIndex == nil || m.ToIndex == nil {
		return "", false, errs.Invalidf("fromIndex", "fromIndex and toIndex are required")
	}
	from, to := *m.FromIndex, *m.ToIndex
	if from < 0 || from >= len(list) || to < 0 || to >= len(list) || list[from].ID != id {
		return "", false, errs.Invalidf("fromIndex", "fromIndex/toIndex do not match the current list (fromIndex must be this entry's place)")
	}
	switch {
	case to < from:
		return list[to].ID, false, nil
	case to > from && to+1 < len(list):
		return list[to+1].ID, false, nil
	case to == from:
		return "", true, nil
	}
	return "", false, nil
}
