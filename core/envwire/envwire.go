// Package envwire holds the JSON shapes of the env store's HTTP routes,
// shared by the edge (/api/v1/envs, ADR 0038) and the control plane
// (/api/v1/projects/{project}/envs, ADR 0051) so one client and the
// panel's env page serve both. No type but EnvValue (the answer of
// reveal) and EnvExport with values carries a value.
package envwire

import "github.com/ql3/ql3/core/env"

// EnvEntry is an entry without its value.
type EnvEntry struct {
	ID          string   `json:"id"`
	Name        string   `json:"name"`
	Remarks     string   `json:"remarks,omitempty"`
	Enabled     bool     `json:"enabled"`
	Position    int64    `json:"position"`
	Pinned      bool     `json:"pinned"`
	Labels      []string `json:"labels,omitempty"`
	CreatedAtMs int64    `json:"createdAtMs"`
	UpdatedAtMs int64    `json:"updatedAtMs"`
}

// EnvValue is the answer of POST …/envs/{id}/reveal.
type EnvValue struct {
	EnvEntry
	Value string `json:"value"`
}

// EnvList is a page of GET …/envs.
type EnvList struct {
	Items      []EnvEntry `json:"items"`
	Total      int        `json:"total"` // entries matching the search
	NextCursor string     `json:"nextCursor,omitempty"`
}

// CreateEnvRequest is the body of POST …/envs and an element of an
// import. Enabled defaults to true.
type CreateEnvRequest struct {
	Name    string   `json:"name"`
	Value   string   `json:"value"`
	Remarks string   `json:"remarks,omitempty"`
	Enabled *bool    `json:"enabled,omitempty"`
	Pinned  bool     `json:"pinned,omitempty"`
	Labels  []string `json:"labels,omitempty"`
}

// PatchEnvRequest is the body of PATCH …/envs/{id}: the fields given
// change. A value is write-only: it is never sent back.
type PatchEnvRequest struct {
	Name    *string   `json:"name,omitempty"`
	Value   *string   `json:"value,omitempty"`
	Remarks *string   `json:"remarks,omitempty"`
	Enabled *bool     `json:"enabled,omitempty"`
	Pinned  *bool     `json:"pinned,omitempty"`
	Labels  *[]string `json:"labels,omitempty"`
}

// MoveEnvRequest is the body of POST …/envs/{id}/move: place the entry
// directly before the entry Before in list order ("" → last).
type MoveEnvRequest struct {
	Before string `json:"before"`
}

// ImportEnvRequest is the body of POST …/envs/import: either Lines
// (NAME=value per line, QingLong's format: # comments, optional export,
// one pair of quotes stripped) or Entries; all are created in one
// transaction, or none.
type ImportEnvRequest struct {
	Lines    string             `json:"lines,omitempty"`
	Entries  []CreateEnvRequest `json:"entries,omitempty"`
	Disabled bool               `json:"disabled,omitempty"` // create the Lines entries disabled
}

// ImportEnvResponse answers an import.
type ImportEnvResponse struct {
	Created int        `json:"created"`
	Items   []EnvEntry `json:"items"`
}

// ExportEnvRequest is the body of POST …/envs/export. Values writes an
// audit line (on the edge it also needs a credential: never the loopback
// exemption).
type ExportEnvRequest struct {
	Format string `json:"format,omitempty"` // json (default) | lines
	Values bool   `json:"values,omitempty"`
}

// EnvExportItem is one entry of a JSON export; Value only with values.
type EnvExportItem struct {
	Name    string   `json:"name"`
	Value   *string  `json:"value,omitempty"`
	Remarks string   `json:"remarks,omitempty"`
	Enabled bool     `json:"enabled"`
	Pinned  bool     `json:"pinned,omitempty"`
	Labels  []string `json:"labels,omitempty"`
}

// EnvExport answers an export: Entries for json, Lines for lines (which
// carries values only, so it needs values).
type EnvExport struct {
	Format  string          `json:"format"`
	Entries []EnvExportItem `json:"entries,omitempty"`
	Lines   string          `json:"lines,omitempty"`
}

// View is e without its value.
func View(e env.Entry) EnvEntry {
	return EnvEntry{ID: e.ID, Name: e.Name, Remarks: e.Remarks, Enabled: e.Enabled, Position: e.Position, Pinned: e.Pinned,
		Labels: e.Labels, CreatedAtMs: e.CreatedAtMs, UpdatedAtMs: e.UpdatedAtMs}
}
