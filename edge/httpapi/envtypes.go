package httpapi

import (
	"github.com/ql3/ql3/core/env"
	"github.com/ql3/ql3/core/envwire"
	"github.com/ql3/ql3/edge"
)

// Wire types of the env store routes (/api/v1/envs, ADR 0038): one copy
// in core/envwire, shared with the control plane's project routes.
type (
	EnvEntry          = envwire.EnvEntry
	EnvValue          = envwire.EnvValue
	EnvList           = envwire.EnvList
	CreateEnvRequest  = envwire.CreateEnvRequest
	PatchEnvRequest   = envwire.PatchEnvRequest
	MoveEnvRequest    = envwire.MoveEnvRequest
	ImportEnvRequest  = envwire.ImportEnvRequest
	ImportEnvResponse = envwire.ImportEnvResponse
	ExportEnvRequest  = envwire.ExportEnvRequest
	EnvExportItem     = envwire.EnvExportItem
	EnvExport         = envwire.EnvExport
)

// RotateKeyResponse answers POST /api/v1/envs/rotate-key.
type RotateKeyResponse struct {
	KeyID string `json:"keyId"` // the new key file's public fingerprint
}

// AuditLine is one line of GET /api/v1/audit.
type AuditLine struct {
	Seq    int64  `json:"seq"`
	AtMs   int64  `json:"atMs"`
	Action string `json:"action"`
	Target string `json:"target,omitempty"`
	Actor  string `json:"actor,omitempty"`
	Detail string `json:"detail,omitempty"`
}

// AuditList is a page of GET /api/v1/audit.
type AuditList struct {
	Items []AuditLine `json:"items"`
	Next  int64       `json:"next,omitempty"` // ?after= of the next page
}

func envView(e env.Entry) EnvEntry { return envwire.View(e) }

func auditView(a edge.AuditEntry) AuditLine {
	return AuditLine{Seq: a.Seq, AtMs: a.AtMs, Action: a.Action, Target: a.Target, Actor: a.Actor, Detail: a.Detail}
}
