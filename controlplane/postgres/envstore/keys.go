// Package envstore is the cluster's env store on PostgreSQL (ADR 0038 for
// the model and the at-rest format, ADR 0051 for the cluster): a project's
// entries in ql3.env_entries, values only as core/envseal ciphertext under
// one data key, wrapped in ql3.env_keys by the key-encryption key of each
// key file that may open it (one; two during a rotation). It implements
// controlplane.EnvStore and controlplane.EnvKeys on the admin role.
//
// The data key lives in this process's memory once UnlockEnv opened it;
// nothing of it is ever written unwrapped. Every replica is given the same
// key file (--secret-key-file) and opens the same data key.
package envstore

import (
	"context"
	"sort"
	"strings"
	"sync"

	"github.com/jackc/pgx/v5"

	"github.com/ql3/ql3/controlplane"
	"github.com/ql3/ql3/controlplane/postgres"
	"github.com/ql3/ql3/controlplane/postgres/publication"
	"github.com/ql3/ql3/core/envseal"
	"github.com/ql3/ql3/core/errs"
)

var (
	_ controlplane.EnvStore = (*Store)(nil)
	_ controlplane.EnvKeys  = (*Store)(nil)
)

// DB is what a Store needs: *pgxpool.Pool on the admin role satisfies it.
type DB interface {
	postgres.DB
	BeginTx(ctx context.Context, opts pgx.TxOptions) (pgx.Tx, error)
}

// Store is the env store. Safe for concurrent use.
type Store struct {
	db DB

	mu      sync.RWMutex
	cipher  *envseal.Cipher
	dataKey []byte
}

// New returns a locked Store over an admin pool.
func New(db DB) *Store { return &Store{db: db} }

// KeyFlag is the setting the errors of a locked store name.
const KeyFlag = "--secret-key-file"

func (s *Store) inTx(ctx context.Context, fn func(ctx context.Context, tx pgx.Tx) error) error {
	return postgres.InTx(ctx, s.db, postgres.Serializable, fn)
}

// Cipher is the open data key's cipher (the dispatcher's EnvOpener), or
// errs.Unavailable while the store is locked.
func (s *Store) Cipher() (*envseal.Cipher, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.cipher == nil {
		return nil, errs.E(errs.Unavailable, "", "the env store is locked: ql3-control was started without %s (the key file every replica shares)", KeyFlag)
	}
	return s.cipher, nil
}

// Unlocked reports whether the data key is open.
func (s *Store) Unlocked() bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.cipher != nil
}

// HasEnvKey implements controlplane.EnvKeys.
func (s *Store) HasEnvKey(ctx context.Context) (bool, error) {
	var has bool
	err := s.db.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM ql3.env_keys)`).Scan(&has)
	return has, postgres.Translate(err)
}

// UnlockEnv implements controlplane.EnvKeys. The first replica to unlock a
// database without a data key creates one (in a SERIALIZABLE transaction:
// replicas starting together with the same key file agree on one).
func (s *Store) UnlockEnv(ctx context.Context, kek envseal.KEK, path string) error {
	var dataKey []byte
	err := s.inTx(ctx, func(ctx context.Context, tx pgx.Tx) error {
		dataKey = nil
		wrapped, known, err := readWrappings(ctx, tx, kek.ID())
		if err != nil {
			return err
		}
		if len(known) == 0 {
			var entries int64
			if err := tx.QueryRow(ctx, `SELECT count(*) FROM ql3.env_entries`).Scan(&entries); err != nil {
				return err
			}
			if entries > 0 {
				return errs.E(errs.Internal, "", "the env store has %d entries but no data key", entries)
			}
			if dataKey, err = envseal.NewDataKey(); err != nil {
				return err
			}
			_, err = tx.Exec(ctx, `INSERT INTO ql3.env_keys (kek_id, wrapped, created_at_ms) VALUES ($1, $2, `+postgres.DBNowMs+`)`,
				kek.ID(), kek.Wrap(dataKey))
			return err
		}
		if wrapped == nil {
			return errs.E(errs.Invalid, KeyFlag, "env key file %s is not a key this database's env values were encrypted with (key id %s; the database knows %s): give every replica the key file the cluster was set up with",
				path, kek.ID(), strings.Join(known, ", "))
		}
		if dataKey, err = kek.Unwrap(wrapped); err != nil {
			return errs.E(errs.Invalid, KeyFlag, "env key file %s does not open this database's env data key (wrong or damaged key file)", path)
		}
		return nil
	})
	if err != nil {
		return err
	}
	c, err := envseal.NewCipher(dataKey)
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.cipher, s.dataKey = c, dataKey
	s.mu.Unlock()
	return nil
}

// readWrappings returns the data key wrapped under kekID (nil if none) and
// every key id the database knows, sorted.
func readWrappings(ctx context.Context, q postgres.DB, kekID string) ([]byte, []string, error) {
	rows, err := q.Query(ctx, `SELECT kek_id, wrapped FROM ql3.env_keys`)
	if err != nil {
		return nil, nil, err
	}
	defer rows.Close()
	var (
		mine  []byte
		known []string
	)
	for rows.Next() {
		var (
			id string
			w  []byte
		)
		if err := rows.Scan(&id, &w); err != nil {
			return nil, nil, err
		}
		known = append(known, id)
		if id == kekID {
			mine = w
		}
	}
	sort.Strings(known)
	return mine, known, rows.Err()
}

func (s *Store) openDataKey() ([]byte, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.dataKey == nil {
		return nil, errs.E(errs.Unavailable, "", "the env store is locked: open it with %s first", KeyFlag)
	}
	return s.dataKey, nil
}

// AddEnvKey implements controlplane.EnvKeys: the data key wrapped under
// next is committed next to the existing wrappings (values are not
// re-encrypted; replicas holding the data key keep serving).
func (s *Store) AddEnvKey(ctx context.Context, next envseal.KEK) error {
	dataKey, err := s.openDataKey()
	if err != nil {
		return err
	}
	return s.inTx(ctx, func(ctx context.Context, tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `INSERT INTO ql3.env_keys (kek_id, wrapped, created_at_ms) VALUES ($1, $2, `+postgres.DBNowMs+`)
			ON CONFLICT (kek_id) DO NOTHING`, next.ID(), next.Wrap(dataKey))
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return errs.E(errs.Conflict, "", "the key id %s already wraps the data key", next.ID())
		}
		return publication.InsertAudit(ctx, tx, controlplane.AuditEnvRotateKey, "env_key", next.ID(), nil)
	})
}

// RetireEnvKeys implements controlplane.EnvKeys.
func (s *Store) RetireEnvKeys(ctx context.Context, keep envseal.KEK) (int, error) {
	if _, err := s.openDataKey(); err != nil {
		return 0, err
	}
	var n int
	err := s.inTx(ctx, func(ctx context.Context, tx pgx.Tx) error {
		wrapped, known, err := readWrappings(ctx, tx, keep.ID())
		if err != nil {
			return err
		}
		if wrapped == nil {
			return errs.E(errs.Invalid, KeyFlag, "key id %s wraps no data key of this database (it knows %s); nothing retired", keep.ID(), strings.Join(known, ", "))
		}
		if _, err := keep.Unwrap(wrapped); err != nil {
			return errs.E(errs.Invalid, KeyFlag, "key id %s does not open this database's data key; nothing retired", keep.ID())
		}
		tag, err := tx.Exec(ctx, `DELETE FROM ql3.env_keys WHERE kek_id <> $1`, keep.ID())
		if err != nil {
			return err
		}
		n = int(tag.RowsAffected())
		return publication.InsertAudit(ctx, tx, controlplane.AuditEnvRetireKey, "env_key", keep.ID(), map[string]any{"retired": n})
	})
	return n, err
}
