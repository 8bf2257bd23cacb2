package adminapi

import (
	"context"

	"github.com/ql3/ql3/controlplane"
	"github.com/ql3/ql3/controlplane/subapi"
	"github.com/ql3/ql3/httpkit"
)

// subscriptionRoutes mounts a project's subscriptions (subapi, ADR 0061).
func (s *Server) subscriptionRoutes(mux httpkit.Mux) {
	subapi.New(subapi.Config{Subs: s.subs, Logger: s.log, Actor: actorID,
		Project: func(ctx context.Context, ref string) (controlplane.Project, error) { return s.b.GetProject(ctx, ref) },
		Run:     func(ctx context.Context, id string) (controlplane.Run, error) { return s.b.GetRun(ctx, id) },
	}).Routes(mux)
}
