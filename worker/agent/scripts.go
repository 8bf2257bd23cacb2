package agent

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/ql3/ql3/core/protocol"
	"github.com/ql3/ql3/core/scriptpath"
	"github.com/ql3/ql3/core/spec"
	"github.com/ql3/ql3/worker/client"
	"github.com/ql3/ql3/worker/executor"
	"github.com/ql3/ql3/worker/scriptcache"
)

// Script tasks on a worker (ADR 0052). Before the start barrier the agent
// makes the offer's pinned tree ready in the script cache (fetching what
// it lacks over the ingress under the attempt's lease, verifying every
// digest) and resolves the interpreter; the launch then runs the
// interpreter on the script inside that read-only tree, from the tree.
// A transfer the network interrupts is tried again on the next pass of the
// loop (the cache resumes it) until the lease lapses; a definite failure —
// a digest that does not match, a refusal, no interpreter — ends the
// attempt at start (executor_start) with its reason in the attempt's log.

// scriptPrep is a script task's launch, ready.
type scriptPrep struct {
	argv    []string
	dir     string
	env     map[string]string
	maxTime time.Duration // a `task -m SECONDS` line's own limit, 0 for none
	err     error         // a definite failure: the attempt fails at start with it
}

// scriptCall is the script c runs from its pinned tree: a script task's,
// or that of a shell task's `task FILE [ARGS]` line (published with its
// tree pinned, run as a script task is — as the edge's `task` helper does).
func scriptCall(c spec.Command) (tc scriptpath.TaskCommand, err error) {
	if c.Script != nil {
		return scriptpath.TaskCommand{File: c.Script.File, Args: c.Script.Args}, nil
	}
	if c.Shell != nil {
		if tc, ok := scriptpath.RunsAsScript(c.Shell.Command); ok {
			return tc, nil
		}
	}
	return tc, errors.New("no script")
}

// prepareScript readies at's script once; ok is false when the tree could
// not be fetched yet for a reason that may pass (try again later).
func (a *Agent) prepareScript(ctx context.Context, at *attempt) (ok bool) {
	if at.script != nil {
		return true
	}
	if at.offer.ScriptTree == "" {
		if c := at.offer.Spec.Shell; c != nil {
			if tc, ok := scriptpath.RunsAsScript(c.Command); ok {
				// Published before its file was in the project's folder.
				at.script = &scriptPrep{err: fmt.Errorf("%s was not in the scripts folder at publish", tc.File)}
			}
		}
		return true
	}
	if a.cfg.Scripts == nil {
		at.script = &scriptPrep{err: errors.New("this worker keeps no script cache")}
		return true
	}
	if !at.deadline.IsZero() {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, at.deadline.Add(-a.cfg.FenceMargin))
		defer cancel()
	}
	f := leaseFetcher{a: a, ref: at.offer.Lease(at.e.LeaseToken)}
	root, st, err := a.cfg.Scripts.Ensure(ctx, at.offer.ScriptTree, f)
	if err != nil {
		// Passing conditions are tried again under the lease: an unknown
		// outcome, a busy or throttling ingress (429/503: a restarted
		// worker resuming a large tree meets the in-flight limit), a
		// certificate not valid yet, the deadline. Only a definite refusal
		// of the fetch itself ends the attempt.
		if st := client.StatusOf(err); client.IsUnknown(err) || st == http.StatusTooManyRequests || st == http.StatusServiceUnavailable ||
			client.NotYetValid(err) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
			a.log.Warn("script tree not fetched yet; trying again", "attempt", at.offer.AttemptID, "err", err)
			return false
		}
		at.script = &scriptPrep{err: fmt.Errorf("script tree %s: %w", at.offer.ScriptTree, err)}
		return true
	}
	a.log.Info("script tree ready", "attempt", at.offer.AttemptID, "tree", at.offer.ScriptTree, "reused", st.Reused,
		"blobs_fetched", st.BlobsFetched, "bytes_fetched", st.BytesFetched, "refetched", st.Refetched, "resumed_at", st.ResumedAtBytes)
	sc, err := scriptCall(at.offer.Spec)
	if err != nil {
		at.script = &scriptPrep{err: err}
		return true
	}
	path := os.Getenv("PATH")
	if d := a.depsDir(at.offer); d != "" {
		path = executor.DepsPATH(d, path) // the venv's python3 runs .py scripts
	}
	argv, dir, err := scriptcache.Command(a.cfg.Interpreters, root, sc.File, sc.Args, path)
	if err != nil {
		at.script = &scriptPrep{err: err}
		return true
	}
	at.script = &scriptPrep{argv: argv, dir: dir, env: map[string]string{"QL3_SCRIPT": sc.File, "QL3_SCRIPTS_DIR": root},
		maxTime: time.Duration(sc.MaxTimeSec) * time.Second}
	return true
}

// startLaunch starts l, a script task's as prepared.
func (a *Agent) startLaunch(at *attempt, l Launch) (Process, error) {
	if p := at.script; p != nil {
		if p.err != nil {
			sc, _ := scriptCall(at.offer.Spec)
			fmt.Fprintf(l.Output, "ql3-worker: cannot start %s: %v\n", sc.File, p.err)
			return nil, fmt.Errorf("%w: %v", ErrNeverStarted, p.err)
		}
		c := l.Spec
		c.Script, c.Argv, c.Shell, c.WorkingDirectory = nil, &spec.Argv{File: p.argv[0], Args: p.argv[1:]}, nil, p.dir
		l.Spec, l.ExtraEnv = c, p.env
		if p.maxTime > 0 && (l.Timeout <= 0 || p.maxTime < l.Timeout) {
			l.Timeout = p.maxTime
		}
	}
	l.ExtraEnv = a.notifyEnv(at, l.ExtraEnv)
	l.DepsDir = a.depsDir(at.offer)
	return a.run.Start(l)
}

// depsDir is the deps directory of o's project (ADR 0062), "" without a
// DepsRoot or a project (an older authority's offer).
func (a *Agent) depsDir(o protocol.Offer) string {
	if a.cfg.DepsRoot == "" || o.ProjectID == "" {
		return ""
	}
	return filepath.Join(a.cfg.DepsRoot, o.ProjectID)
}

// leaseFetcher reads the leased Run's tree over the ingress.
type leaseFetcher struct {
	a   *Agent
	ref protocol.LeaseRef
}

func (f leaseFetcher) TreePage(ctx context.Context, after string) (protocol.ScriptTreePage, error) {
	body, err := protocol.ScriptTreeRequest{LeaseRef: f.ref, After: after}.Encode()
	if err != nil {
		return protocol.ScriptTreePage{}, err
	}
	resp, _, err := f.a.post(ctx, protocol.PathScriptTree, body, protocol.MaxScriptTreePageBytes)
	if err != nil {
		return protocol.ScriptTreePage{}, err
	}
	return protocol.DecodeScriptTreePage(resp.Body)
}

func (f leaseFetcher) Blob(ctx context.Context, sum string, offset, limit int64) ([]byte, int64, error) {
	body, err := protocol.ScriptBlobRequest{LeaseRef: f.ref, SHA256: sum, Offset: offset, Limit: limit}.Encode()
	if err != nil {
		return nil, 0, err
	}
	resp, _, err := f.a.post(ctx, protocol.PathScriptBlob, body, protocol.MaxScriptBlobChunk)
	if err != nil {
		return nil, 0, err
	}
	size, err := strconv.ParseInt(resp.Header.Get(protocol.HeaderScriptBlobSize), 10, 64)
	if err != nil || size < 0 {
		return nil, 0, fmt.Errorf("script blob answer without a valid %s", protocol.HeaderScriptBlobSize)
	}
	return resp.Body, size, nil
}
