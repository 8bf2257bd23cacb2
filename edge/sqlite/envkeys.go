package sqlite

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/edge"
	"github.com/ql3/ql3/edge/envcrypt"
)

// envKeys holds the env store's data key in memory once UnlockEnv opened
// it; nothing of it is ever written unwrapped.
type envKeys struct {
	mu      sync.RWMutex
	cipher  *envcrypt.Cipher
	dataKey []byte
	version atomic.Uint64 // bumped by every env write (EnvVersion)
}

// EnvVersion implements edge.EnvStore.
func (s *Store) EnvVersion() uint64 { return s.env.version.Load() }

// envWrite is writeDurable for a change of the entries: the version moves
// after the commit, so a reader caching by version re-reads.
func (s *Store) envWrite(ctx context.Context, fn func(tx *wtx, sg *signals) error) error {
	err := s.writeDurable(ctx, fn)
	s.env.version.Add(1)
	return err
}

func (s *Store) envCipher() (*envcrypt.Cipher, error) {
	s.env.mu.RLock()
	defer s.env.mu.RUnlock()
	if s.env.cipher == nil {
		return nil, errs.E(errs.Unavailable, "", "the env store is locked: its key file has not been opened")
	}
	return s.env.cipher, nil
}

// HasEnvKey implements edge.EnvStore.
func (s *Store) HasEnvKey(ctx context.Context) (bool, error) {
	var n int
	if err := s.reader.QueryRowContext(ctx, `SELECT count(*) FROM env_keys`).Scan(&n); err != nil {
		return false, translate(err)
	}
	return n > 0, nil
}

// UnlockEnv implements edge.EnvStore.
func (s *Store) UnlockEnv(ctx context.Context, kek *envcrypt.KEK) error {
	var dataKey []byte
	err := s.writeDurable(ctx, func(tx *wtx, _ *signals) error {
		wrapped, known, err := readWrappings(ctx, tx, kek.ID())
		if err != nil {
			return err
		}
		if len(known) == 0 {
			var entries int
			if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM envs`).Scan(&entries); err != nil {
				return err
			}
			if entries > 0 {
				return errs.E(errs.Internal, "", "the env store has %d entries but no data key", entries)
			}
			if dataKey, err = envcrypt.NewDataKey(); err != nil {
				return err
			}
			_, err = tx.ExecContext(ctx, `INSERT INTO env_keys (kek_id, wrapped, created_at_ms) VALUES (?, ?, ?)`,
				kek.ID(), kek.Wrap(dataKey), s.clock.Now().UnixMilli())
			return err
		}
		if wrapped == nil {
			return &envcrypt.KeyFileError{Path: kek.Path(), Reason: fmt.Sprintf(
				"is not the key this database's env values were encrypted with (key id %s; the database knows %s); restore the key file that belongs to this data directory",
				kek.ID(), strings.Join(known, ", "))}
		}
		dataKey, err = kek.Unwrap(wrapped)
		return err
	})
	if err != nil {
		return err
	}
	c, err := envcrypt.NewCipher(dataKey)
	if err != nil {
		return err
	}
	s.env.mu.Lock()
	s.env.cipher, s.env.dataKey = c, dataKey
	s.env.mu.Unlock()
	s.env.version.Add(1)
	return nil
}

// readWrappings returns the data key wrapped under kekID (nil if none) and
// every KEK id the database knows.
func readWrappings(ctx context.Context, q queryer, kekID string) ([]byte, []string, error) {
	rows, err := q.QueryContext(ctx, `SELECT kek_id, wrapped FROM env_keys`)
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

// RotateEnvKey implements edge.EnvStore.
func (s *Store) RotateEnvKey(ctx context.Context, next *envcrypt.KEK, install func() error, actor string) error {
	s.env.mu.RLock()
	dataKey := s.env.dataKey
	s.env.mu.RUnlock()
	if dataKey == nil {
		return errs.E(errs.Unavailable, "", "the env store is locked: its key file has not been opened")
	}
	now := s.clock.Now().UnixMilli()
	if err := s.writeDurable(ctx, func(tx *wtx, _ *signals) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO env_keys (kek_id, wrapped, created_at_ms) VALUES (?, ?, ?)`,
			next.ID(), next.Wrap(dataKey), now)
		return err
	}); err != nil {
		return err
	}
	// Both the old and the new key file open the database now; a crash
	// here or a failed install leaves it so (the next rotation tidies up).
	if err := install(); err != nil {
		return err
	}
	return s.writeDurable(ctx, func(tx *wtx, _ *signals) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM env_keys WHERE kek_id <> ?`, next.ID())
		if err != nil {
			return err
		}
		n, _ := res.RowsAffected()
		return insertAudit(ctx, tx, edge.AuditEntry{AtMs: now, Action: edge.AuditEnvRotateKey, Target: next.ID(), Actor: actor,
			Detail: fmt.Sprintf("data key re-wrapped; %d old wrapping(s) removed", n)})
	})
}

func insertAudit(ctx context.Context, tx *wtx, a edge.AuditEntry) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO audit_log (at_ms, action, target, actor, detail) VALUES (?, ?, ?, ?, ?)`,
		a.AtMs, a.Action, truncateUTF8(a.Target, 256), truncateUTF8(a.Actor, 64), truncateUTF8(a.Detail, 512))
	return err
}

// ListAudit implements edge.EnvStore.
func (s *Store) ListAudit(ctx context.Context, afterSeq int64, limit int) ([]edge.AuditEntry, error) {
	limit, err := pageLimit(limit)
	if err != nil {
		return nil, err
	}
	rows, err := s.reader.QueryContext(ctx, `SELECT seq, at_ms, action, target, actor, detail FROM audit_log
WHERE seq > ? ORDER BY seq LIMIT ?`, afterSeq, limit)
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	var out []edge.AuditEntry
	for rows.Next() {
		var a edge.AuditEntry
		if err := rows.Scan(&a.Seq, &a.AtMs, &a.Action, &a.Target, &a.Actor, &a.Detail); err != nil {
			return nil, translate(err)
		}
		out = append(out, a)
	}
	return out, translate(rows.Err())
}

// PruneAudit deletes up to limit (≤ edge.MaxPruneBatch) audit lines older
// than beforeMs, oldest first, and returns how many.
func (s *Store) PruneAudit(ctx context.Context, beforeMs int64, limit int) (int, error) {
	if limit < 1 || limit > edge.MaxPruneBatch {
		return 0, errs.Invalidf("limit", "must be 1..%d, got %d", edge.MaxPruneBatch, limit)
	}
	var n int64
	err := s.write(ctx, func(tx *wtx, _ *signals) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM audit_log WHERE seq IN
    (SELECT seq FROM audit_log WHERE at_ms < ? ORDER BY seq LIMIT ?)`, beforeMs, limit)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	return int(n), err
}
