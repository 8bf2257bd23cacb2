package adminapi

import (
	"github.com/ql3/ql3/core/env"
	"github.com/ql3/ql3/core/envwire"
)

// Wire types of a project's env store (/api/v1/projects/{project}/envs,
// ADR 0051): the edge API's shapes, one copy in core/envwire, so one
// client and the panel's env page serve both.
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

func envView(e env.Entry) EnvEntry { return envwire.View(e) }
