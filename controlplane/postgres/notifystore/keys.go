// Package notifystore keeps notifications in PostgreSQL (migration 0015,
// ADR 0053): a project's channels (settings sealed under the notify data
// key), rules, and the outbox the deliverer derives from the run-event
// feed and delivers under per-row fenced claims. The records and the
// decisions are notifykit's, the same as ql3-edge's.
package notifystore

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"

	"github.com/ql3/ql3/controlplane/postgres"
	"github.com/ql3/ql3/core/envseal"
	"github.com/ql3/ql3/core/errs"
)

// OpenCipher returns the notify data key's cipher: the wrapped data key
// stored in ql3.notify_keys, unwrapped by kek; the first replica to start
// creates it (every replica loads the same key file).
func OpenCipher(ctx context.Context, db postgres.DB, kek envseal.KEK) (*envseal.Cipher, error) {
	var kekID string
	var wrapped []byte
	err := db.QueryRow(ctx, `SELECT kek_id, wrapped FROM ql3.notify_keys WHERE id = 1`).Scan(&kekID, &wrapped)
	if errors.Is(err, pgx.ErrNoRows) {
		dk, err := envseal.NewDataKey()
		if err != nil {
			return nil, err
		}
		if _, err := db.Exec(ctx, `INSERT INTO ql3.notify_keys (id, kek_id, wrapped, created_at_ms)
VALUES (1, $1, $2, (extract(epoch FROM clock_timestamp()) * 1000)::bigint) ON CONFLICT (id) DO NOTHING`, kek.ID(), kek.Wrap(dk)); err != nil {
			return nil, postgres.Translate(err)
		}
		err = db.QueryRow(ctx, `SELECT kek_id, wrapped FROM ql3.notify_keys WHERE id = 1`).Scan(&kekID, &wrapped)
		if err != nil {
			return nil, postgres.Translate(err)
		}
	} else if err != nil {
		return nil, postgres.Translate(err)
	}
	if kekID != kek.ID() {
		return nil, errs.E(errs.Invalid, "secret-key-file", "the key file's key (id %s) is not the one that wrapped the notify data key (id %s)", kek.ID(), kekID)
	}
	dk, err := kek.Unwrap(wrapped)
	if err != nil {
		return nil, errs.E(errs.Invalid, "secret-key-file", "%v", err)
	}
	return envseal.NewCipher(dk)
}
