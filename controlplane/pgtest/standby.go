package pgtest

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"
)

// StartStandby starts a streaming replica of c (pg_basebackup -R over the
// primary's socket, so its primary_conninfo points there) and waits until it
// accepts read-only connections. It is stopped when the test ends.
func (c *Cluster) StartStandby(tb testing.TB) *Cluster {
	tb.Helper()
	s, err := c.startStandby()
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := s.Stop(); err != nil {
			tb.Errorf("pgtest: stop standby: %v", err)
		}
	})
	return s
}

func (c *Cluster) startStandby() (*Cluster, error) {
	if err := checkBinDir(c.bin, standbyBinaries...); err != nil {
		return nil, fmt.Errorf("pgtest: a standby needs pg_basebackup in %s (the embedded PostgreSQL 18 build has none: run standby tests on Debian's server): %w", c.bin, err)
	}
	s, err := newClusterDir(c.bin, c.user)
	if err != nil {
		return nil, err
	}
	s.password = c.password
	cmd := s.user.command(s.dir, filepath.Join(c.bin, "pg_basebackup"),
		"-D", s.dataDir, "-R", "-X", "stream", "-c", "fast", "--no-sync",
		"-h", c.sockDir, "-p", fmt.Sprint(c.port), "-U", superuser)
	if err := runQuiet(cmd); err != nil {
		return nil, errors.Join(fmt.Errorf("pgtest: pg_basebackup: %w", err), s.Stop())
	}
	if err := s.startServer(); err != nil {
		return nil, errors.Join(err, s.Stop())
	}
	return s, nil
}

// IsStandby reports whether the server is in recovery.
func (c *Cluster) IsStandby(ctx context.Context) (bool, error) {
	conn, err := c.Connect(ctx, "postgres")
	if err != nil {
		return false, err
	}
	defer conn.Close(ctx)
	var rec bool
	err = conn.QueryRow(ctx, "SELECT pg_is_in_recovery()").Scan(&rec)
	return rec, err
}

// Promote turns a standby into a primary (pg_promote, waiting up to 60 s)
// and reports once it accepts writes.
func (c *Cluster) Promote(ctx context.Context) error {
	conn, err := c.Connect(ctx, "postgres")
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	var ok bool
	if err := conn.QueryRow(ctx, "SELECT pg_promote(true, 60)").Scan(&ok); err != nil {
		return fmt.Errorf("pgtest: promote: %w", err)
	}
	if !ok {
		return fmt.Errorf("pgtest: promote did not finish in 60 s:\n%s", c.LogTail(2000))
	}
	return nil
}

// WaitReplayed blocks until standby s has replayed everything primary c has
// written so far (its current WAL insert position).
func (c *Cluster) WaitReplayed(ctx context.Context, s *Cluster) error {
	pc, err := c.Connect(ctx, "postgres")
	if err != nil {
		return err
	}
	var lsn string
	err = pc.QueryRow(ctx, "SELECT pg_current_wal_insert_lsn()::text").Scan(&lsn)
	_ = pc.Close(ctx)
	if err != nil {
		return err
	}
	sc, err := s.Connect(ctx, "postgres")
	if err != nil {
		return err
	}
	defer sc.Close(ctx)
	return pollUntil(ctx, 5*time.Millisecond, "standby did not replay "+lsn, func() (done bool, err error) {
		err = sc.QueryRow(ctx, "SELECT coalesce(pg_last_wal_replay_lsn() >= $1::pg_lsn, false)", lsn).Scan(&done)
		return done, err
	})
}

// pollUntil asks check every interval until it reports done, fails, or ctx
// ends (then the error says what did not happen).
func pollUntil(ctx context.Context, every time.Duration, what string, check func() (bool, error)) error {
	for {
		done, err := check()
		if err != nil || done {
			return err
		}
		t := time.NewTimer(every)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("pgtest: %s: %w", what, ctx.Err())
		case <-t.C:
		}
	}
}

// RequireSynchronousStandby makes every commit in database db wait until
// a standby has flushed it (synchronous_standby_names = '*' on c, and the
// database's synchronous_commit = on, which outranks the harness's
// command-line off), and returns once a standby reports sync. A promoted
// standby does not inherit synchronous_standby_names (ALTER SYSTEM writes
// only c's own directory), so it does not wait for a standby it lacks.
func (c *Cluster) RequireSynchronousStandby(ctx context.Context, db string) error {
	for _, sql := range []string{
		"ALTER SYSTEM SET synchronous_standby_names = '*'",
		"SELECT pg_reload_conf()",
		fmt.Sprintf("ALTER DATABASE %q SET synchronous_commit = on", db),
	} {
		if _, err := c.exec(ctx, "postgres", sql); err != nil {
			return fmt.Errorf("pgtest: %s: %w", sql, err)
		}
	}
	conn, err := c.Connect(ctx, "postgres")
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	return pollUntil(ctx, 10*time.Millisecond, "no standby became synchronous", func() (sync bool, err error) {
		err = conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_stat_replication WHERE sync_state = 'sync')").Scan(&sync)
		return sync, err
	})
}
