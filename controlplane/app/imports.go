package app

import (
	"context"
	"os"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ql3/ql3/controlplane"
	"github.com/ql3/ql3/controlplane/importer"
	"github.com/ql3/ql3/controlplane/postgres/envstore"
	"github.com/ql3/ql3/controlplane/postgres/importstore"
	"github.com/ql3/ql3/controlplane/postgres/publication"
	"github.com/ql3/ql3/controlplane/subrun"
)

// importService is the QingLong import of serve (ADR 0063): plans applied
// through the publication room, the env store and the scripts store in
// one transaction. Uploads are unpacked into a private temporary folder of
// this process, removed when serve's context ends; without one the upload
// route answers 503 and a path on the server still works.
func (m *Main) importService(ctx context.Context, pool *pgxpool.Pool, pub *publication.Publisher, envs *envstore.Store, subs *subrun.Service) controlplane.Imports {
	im := &importer.Importer{Store: importstore.New(pool, pub, envs)}
	if subs != nil {
		im.SubTasks = subs // imported subscriptions' pull tasks (ADR 0061)
	}
	s := &importer.Service{Importer: im}
	if dir, err := os.MkdirTemp("", "ql3-control-import-"); err != nil {
		m.log.Warn("no folder for QingLong import uploads: inspect a path on the server instead", "err", err)
	} else {
		s.UploadDir = dir
		context.AfterFunc(ctx, func() { _ = os.RemoveAll(dir) })
	}
	return s
}
