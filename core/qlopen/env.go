package qlopen

import "github.com/ql3/ql3/core/env"

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
