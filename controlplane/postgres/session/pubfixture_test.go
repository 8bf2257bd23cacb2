package session_test

import (
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ql3/ql3/controlplane/pgtest"
	"github.com/ql3/ql3/controlplane/postgres"
	"github.com/ql3/ql3/controlplane/postgres/publication"
)

// pubFixture is one test database with an admin publisher, a runtime pool
// and the database for inspection (the session tests publish workers).
type pubFixture struct {
	pub     *publication.Publisher
	admin   *pgxpool.Pool
	runtime *pgxpool.Pool
	db      *pgtest.DB
}

func newPubFixture(t *testing.T) pubFixture {
	t.Helper()
	db := pgtest.NewDB(t)
	admin := db.Pool(t, postgres.RoleAdmin)
	return pubFixture{pub: publication.NewPublisher(admin, publication.PublisherOptions{}), admin: admin,
		runtime: db.Pool(t, postgres.RoleRuntime), db: db}
}
