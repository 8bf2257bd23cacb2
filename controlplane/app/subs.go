package app

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ql3/ql3/controlplane"
	"github.com/ql3/ql3/controlplane/postgres"
	"github.com/ql3/ql3/controlplane/postgres/dispatch"
	"github.com/ql3/ql3/controlplane/postgres/publication"
	"github.com/ql3/ql3/controlplane/postgres/runops"
	"github.com/ql3/ql3/controlplane/postgres/scriptstore"
	"github.com/ql3/ql3/controlplane/postgres/session"
	"github.com/ql3/ql3/controlplane/postgres/substore"
	"github.com/ql3/ql3/controlplane/subrun"
	"github.com/ql3/ql3/core/errs"
)

// Subscriptions (ADR 0061): the admin API's port, and — in a replica that
// runs the scheduler — the in-process executor that runs the pulls as
// Runs of the subscriptions' system tasks, as a worker of its own
// ("ql3-control-subscriptions <host> <listen>") holding a session through
// the ordinary session and lease ports.

// subsIdle is the longest pause of the executor between empty pulls.
const subsIdle = 5 * time.Second

func (m *Main) subsDir() string {
	if m.Config.SubsDir != "" {
		return m.Config.SubsDir
	}
	return filepath.Join(os.TempDir(), fmt.Sprintf("ql3-control-subs-%d", os.Getuid()))
}

func (m *Main) startSubscriptions(ctx context.Context, admin *pgxpool.Pool, pub *publication.Publisher, ops *runops.RunOps) (*subrun.Service, error) {
	dir := m.subsDir()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("subscriptions: %w", err)
	}
	subs := substore.New(admin)
	puller := &subrun.Puller{Subs: subs, Trees: scriptstore.New(admin), Tasks: pub, WorkDir: dir, Credential: m.subCredential}
	svc := &subrun.Service{Subs: subs, Tasks: pub, Runs: ops, Puller: puller}
	if m.Config.NoScheduler {
		m.log.Info("subscription pulls are not run in this replica (--no-scheduler)")
		return svc, nil
	}
	if _, err := m.Config.roleDSN(postgres.RoleWorkerIngress); err != nil {
		m.log.Info("subscription pulls are not run in this replica: no DSN for the worker ingress role", "err", err)
		return svc, nil
	}
	m.mu.Lock()
	runtime := m.runtimePool
	m.mu.Unlock()
	ingress, err := m.openRolePoolSized(ctx, postgres.RoleWorkerIngress, "ql3-control subscriptions", 2)
	if err != nil {
		return nil, err
	}
	sessions, err := session.NewSessions(ingress, session.SessionOptions{})
	if err != nil {
		ingress.Close()
		return nil, err
	}
	disp, err := dispatch.NewDispatcher(runtime, dispatch.DispatchOptions{})
	if err != nil {
		ingress.Close()
		return nil, err
	}
	principal, err := m.subsWorker(ctx, pub)
	if err != nil {
		ingress.Close()
		return nil, fmt.Errorf("subscriptions: the executor's worker: %w", err)
	}
	ex := &subrun.Executor{Puller: puller, Sessions: sessions, Leases: disp, Principal: principal, Log: m.log}
	rctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = ex.Serve(rctx, subsIdle) })
	m.mu.Lock()
	m.subsStop = func() { cancel(); wg.Wait(); ingress.Close() }
	m.mu.Unlock()
	m.log.Info("subscription executor started", "worker", principal.WorkerID, "dir", dir)
	return svc, nil
}

// subsWorker finds or registers this replica's executor worker and gives
// it a fresh credential (the previous ones are superseded at once).
func (m *Main) subsWorker(ctx context.Context, pub *publication.Publisher) (controlplane.Principal, error) {
	host, _ := os.Hostname()
	name := "ql3-control-subscriptions " + host
	if _, port, err := net.SplitHostPort(m.Config.Listen); err == nil {
		name += " " + port
	}
	name = strings.TrimSpace(name)
	if len(name) > 128 {
		name = name[:128]
	}
	ctx = controlplane.WithActor(ctx, controlplane.Actor{Kind: "system", ID: "subscriptions"})
	w, err := pub.GetWorker(ctx, name)
	if errs.Code(err) == errs.NotFound {
		w, err = pub.RegisterWorker(ctx, controlplane.WorkerInput{Name: name})
	}
	if err != nil {
		return controlplane.Principal{}, err
	}
	grace := int64(0)
	cred, _, err := pub.RotateWorkerCredentials(ctx, w.ID, &grace)
	if err != nil {
		cred, _, err = pub.IssueWorkerCredential(ctx, w.ID)
	}
	if err != nil {
		return controlplane.Principal{}, err
	}
	return controlplane.Principal{WorkerID: w.ID, CredentialID: cred.ID, TLSIdentity: "in-process"}, nil
}

// subCredential reads the value of a project's env store entry by name
// (the export is audited, as every read of values is).
func (m *Main) subCredential(ctx context.Context, projectID, name string) (string, error) {
	m.mu.Lock()
	envs := m.envs
	m.mu.Unlock()
	if envs == nil {
		return "", errs.E(errs.Unavailable, "credential", "the env store is not open on this replica")
	}
	all, err := envs.ExportEnvs(ctx, projectID, true)
	if err != nil {
		return "", err
	}
	for _, e := range all {
		if e.Name == name && e.Enabled {
			return e.Value, nil
		}
	}
	return "", errs.NotFoundf("the project's env store has no enabled entry %q", name)
}

// stopSubs ends the executor (a pull in flight is cut off: its lease
// lapses and the sweep settles its Run).
func (m *Main) stopSubs() {
	m.mu.Lock()
	stop := m.subsStop
	m.subsStop = nil
	m.mu.Unlock()
	if stop != nil {
		stop()
	}
}
