package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"time"

	"github.com/ql3/ql3/edge"
	"github.com/ql3/ql3/edge/envcrypt"
	"github.com/ql3/ql3/edge/httpapi"
	"github.com/ql3/ql3/edge/sqlite"
)

// EnvKeyFilePath is where the env store's key-encryption key lives
// (ADR 0038): --env-key-file, else <data dir>/env.key.
func (c Config) EnvKeyFilePath() string {
	if c.EnvKeyFile != "" {
		return c.EnvKeyFile
	}
	return filepath.Join(c.DataDir, envcrypt.DefaultKeyFileName)
}

// unlockEnvStore opens the env store with its key file. On a database
// without a data key (first start) a missing key file is created 0600; on
// one with a data key the key file must exist and match — a fresh key
// would not open the values, so the error names the file to restore.
func unlockEnvStore(ctx context.Context, store *sqlite.Store, path string, log *slog.Logger) error {
	has, err := store.HasEnvKey(ctx)
	if err != nil {
		return fmt.Errorf("reading the env store's key: %w", err)
	}
	kek, err := envcrypt.LoadKeyFile(path)
	switch {
	case errors.Is(err, envcrypt.ErrNoKeyFile) && !has:
		if kek, err = envcrypt.CreateKeyFile(path); err != nil {
			return err
		}
		log.Info("created the env store's key file; back it up apart from the database: the values cannot be read without it")
	case errors.Is(err, envcrypt.ErrNoKeyFile):
		return fmt.Errorf("%w; the env store's values were encrypted with it: restore it (or point --env-key-file at it)", err)
	case err != nil:
		return err
	}
	return store.UnlockEnv(ctx, kek)
}

// envKeyRotation is the API's key rotation: a fresh key file replaces the
// old one after the data key is wrapped under it (sqlite.RotateEnvKey);
// one rotation at a time.
func envKeyRotation(store *sqlite.Store, path string) httpapi.RotateKeyFunc {
	var mu sync.Mutex
	return func(ctx context.Context, actor string) (string, error) {
		mu.Lock()
		defer mu.Unlock()
		next, err := envcrypt.NewKEK(path)
		if err != nil {
			return "", err
		}
		if err := store.RotateEnvKey(ctx, next, func() error { return envcrypt.ReplaceKeyFile(next) }, actor); err != nil {
			return "", err
		}
		return next.ID(), nil
	}
}

// AuditRetention is how long the edge keeps audit lines (env reads and
// changes, key rotations): 90 days, as the control plane's default.
const AuditRetention = 90 * 24 * time.Hour

// pruneAudit removes audit lines older than AuditRetention, in bounded
// batches like pruneRuns.
func (m *Main) pruneAudit(ctx context.Context, now time.Time) {
	cutoff := now.Add(-AuditRetention).UnixMilli()
	for range maxPruneBatchesPerSweep {
		n, err := m.store.PruneAudit(ctx, cutoff, edge.MaxPruneBatch)
		if err != nil {
			m.log.Warn("audit retention sweep failed", "err", err)
			return
		}
		if n < edge.MaxPruneBatch {
			return
		}
	}
}
