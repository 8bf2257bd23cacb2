package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/ql3/ql3/core/run"
	"github.com/ql3/ql3/edge"
	"github.com/ql3/ql3/worker/executor"
)

// RecoveryReport says what Recover found.
type RecoveryReport struct {
	InFlight   int // attempts the store had as starting/running
	Terminated int // of those, attempts whose processes were still alive and were terminated
	Unkillable int // attempts with processes that survived SIGKILL (recorded lost without retry)
	Recorded   int // attempts whose lost result was recorded
}

// Recover ends every attempt a previous ql3-edge process left starting or
// running (see the package doc). Call it once, before Run; Run calls it
// itself if needed. Errors are store errors: the runner must not start
// claiming runs while an earlier attempt's fate is unknown.
func (r *Runner) Recover(ctx context.Context) (RecoveryReport, error) {
	var rep RecoveryReport
	inflight, err := r.store.ListInFlight(ctx)
	if err != nil {
		return rep, fmt.Errorf("runner: recovery: %w", err)
	}
	rep.InFlight = len(inflight)
	for _, f := range inflight {
		ref := edge.AttemptRef{RunID: f.Run.ID, Number: f.Attempt.Number}
		r.mu.Lock()
		_, ours := r.active[ref]
		r.mu.Unlock()
		if ours {
			continue // started by this process (Recover called late): not a leftover
		}
		leader, err := r.readIdentity(ref)
		if err != nil {
			// No or a torn identity file: fall back to what the store has;
			// the environment markers still identify the processes.
			leader = executor.Identity{PID: f.Attempt.PID, PGID: f.Attempt.PGID}
		}
		res := edge.AttemptResult{Status: run.AttemptLost, ErrorClass: run.ErrorWorkerLost}
		orphans, terr := r.exec.TerminateOrphans(ctx, ref.RunID, ref.Number, leader)
		switch {
		case terr != nil && ctx.Err() != nil:
			return rep, ctx.Err()
		case terr != nil:
			rep.Unkillable++
			res.NoRetry = true
			res.Message = "ql3-edge restarted; the attempt's processes could not be proven gone, so it is not retried"
			r.log.Error("recovery: attempt processes survive", "run", ref.RunID, "attempt", ref.Number, "err", terr)
		case orphans.Found > 0:
			rep.Terminated++
			res.Message = "ql3-edge restarted while the attempt ran; its processes were terminated"
		default:
			res.Message = "ql3-edge restarted; the attempt's process was gone"
		}
		if info, err := r.logs.Info(ref.RunID, ref.Number); err == nil {
			res.LogSize, res.LogTruncated = info.Size, info.Truncated
		}
		res.FinishedAtMs = r.clock.Now().UnixMilli()
		if _, err := r.store.FinishAttempt(ctx, ref, res); err != nil {
			return rep, fmt.Errorf("runner: recovery of run %s attempt %d: %w", ref.RunID, ref.Number, err)
		}
		rep.Recorded++
		r.removeIdentity(ref)
		r.log.Warn("recovered interrupted attempt", "run", ref.RunID, "attempt", ref.Number, "message", res.Message)
	}
	r.removeStaleIdentities(inflight)
	r.mu.Lock()
	r.recovered = true
	r.mu.Unlock()
	return rep, nil
}

// Identity files: <StateDir>/<runID>.<attempt>.proc holding
// executor.Identity.String(). Run ids are UUIDs, so '.' separates safely.
const identitySuffix = ".proc"

func (r *Runner) identityPath(ref edge.AttemptRef) string {
	return filepath.Join(r.cfg.StateDir, ref.RunID+"."+strconv.Itoa(ref.Number)+identitySuffix)
}

// writeIdentity records the leader identity right after spawning. No fsync:
// after a power loss the boot id differs and every process is gone anyway;
// after a crash of ql3-edge alone the page cache keeps the file.
func (r *Runner) writeIdentity(ref edge.AttemptRef, id executor.Identity) error {
	return os.WriteFile(r.identityPath(ref), []byte(id.String()+"\n"), 0o600)
}

func (r *Runner) readIdentity(ref edge.AttemptRef) (executor.Identity, error) {
	f, err := os.Open(r.identityPath(ref))
	if err != nil {
		return executor.Identity{}, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, 256))
	if err != nil {
		return executor.Identity{}, err
	}
	return decodeIdentityFile(data)
}

var errTornIdentity = errors.New("identity file is incomplete")

// decodeIdentityFile parses one identity line.
func decodeIdentityFile(data []byte) (executor.Identity, error) {
	line, ok := strings.CutSuffix(string(data), "\n")
	if !ok {
		return executor.Identity{}, errTornIdentity
	}
	return executor.ParseIdentity(line)
}

func (r *Runner) removeIdentity(ref edge.AttemptRef) {
	if err := os.Remove(r.identityPath(ref)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		r.log.Warn("removing process identity", "run", ref.RunID, "attempt", ref.Number, "err", err)
	}
}

// removeStaleIdentities deletes identity files of attempts that are not in
// flight (left by a crash after FinishAttempt committed).
func (r *Runner) removeStaleIdentities(inflight []edge.InFlight) {
	entries, err := os.ReadDir(r.cfg.StateDir)
	if err != nil {
		return
	}
	keep := make(map[string]bool, len(inflight))
	for _, f := range inflight {
		keep[filepath.Base(r.identityPath(edge.AttemptRef{RunID: f.Run.ID, Number: f.Attempt.Number}))] = true
	}
	r.mu.Lock()
	for ref := range r.active {
		keep[filepath.Base(r.identityPath(ref))] = true
	}
	r.mu.Unlock()
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), identitySuffix) && !keep[e.Name()] {
			_ = os.Remove(filepath.Join(r.cfg.StateDir, e.Name()))
		}
	}
}
