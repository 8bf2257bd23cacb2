package app

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ql3/ql3/controlplane/ingress"
	"github.com/ql3/ql3/controlplane/postgres"
	"github.com/ql3/ql3/controlplane/postgres/dispatch"
	"github.com/ql3/ql3/controlplane/postgres/notifystore"
	"github.com/ql3/ql3/controlplane/postgres/publication"
	"github.com/ql3/ql3/controlplane/postgres/pullpace"
	"github.com/ql3/ql3/controlplane/postgres/scriptstore"
	"github.com/ql3/ql3/controlplane/postgres/session"
	"github.com/ql3/ql3/notifykit"
)

// ingressParts is what the worker ingress runs on: its listener, its own
// ingress-role pool and the admin-pool credential reconciler.
type ingressParts struct {
	srv       *ingress.Server
	pool      *pgxpool.Pool // ingress role
	dispatch  *pgxpool.Pool // runtime role, the dispatcher's own
	stopPacer context.CancelFunc
	pacerDone chan struct{}
	stopRecon chan struct{}
	reconDone chan struct{}
}

// startIngress starts the worker ingress (after readiness and recovery,
// DESIGN.md §3) when its TLS material is configured, with the dispatcher on
// a runtime-role pool of its own (so pulls never take the scheduler's
// connections), and the credential reconciler in any case.
func (m *Main) startIngress(ctx context.Context, pub *publication.Publisher) error {
	m.startReconciler(pub)
	if !m.Config.ingressEnabled() {
		m.log.Info("worker ingress not started: no --ingress-tls-cert/--ingress-tls-key/--ingress-client-ca")
		return nil
	}
	pool, err := m.openRolePoolSized(ctx, postgres.RoleWorkerIngress, "ql3-control ingress", int32(m.Config.IngressMaxConns))
	if err != nil {
		return err
	}
	m.mu.Lock()
	m.ingress.pool = pool
	m.mu.Unlock()
	sessions, err := session.NewSessions(pool, session.SessionOptions{Lease: m.Config.Lease()})
	if err != nil {
		return err
	}
	dpool, err := m.openRolePool(ctx, postgres.RoleRuntime, "ql3-control dispatch")
	if err != nil {
		return err
	}
	m.mu.Lock()
	m.ingress.dispatch = dpool
	m.mu.Unlock()
	m.mu.Lock()
	opener := envOpener(m.envs)
	m.mu.Unlock()
	leases, err := dispatch.NewDispatcher(dpool, dispatch.DispatchOptions{Lease: m.Config.Lease(), Env: opener})
	if err != nil {
		return err
	}
	// The pacing forecast reads the scheduler's cursors on the dispatcher's
	// runtime-role pool: that role already reads trigger_schedules, the
	// ingress role does not and need not (ADR 0030).
	pacing := m.Config.PullPacerOptions()
	pacing.Logger = m.log.With("component", "pull-pacer")
	pacer, err := pullpace.NewPullPacer(dpool, pacing)
	if err != nil {
		return err
	}
	pctx, stopPacer := context.WithCancel(context.Background())
	pacerDone := make(chan struct{})
	go func() { defer close(pacerDone); pacer.Run(pctx) }()
	m.mu.Lock()
	m.ingress.stopPacer, m.ingress.pacerDone = stopPacer, pacerDone
	m.mu.Unlock()
	auth := session.NewWorkerAuth(pool)
	cfg := ingress.Config{
		TLS: ingress.TLSFiles{CertFile: m.Config.IngressTLSCert, KeyFile: m.Config.IngressTLSKey,
			ClientCAFile: m.Config.IngressClientCA, CRLFile: m.Config.IngressCRL},
		Sessions: sessions, Audit: auth,
		Auth: ingress.NewPrincipalCache(auth, time.Duration(m.Config.IngressAuthCacheMs)*time.Millisecond, time.Now), Logger: m.log.With("component", "ingress"),
		MaxInFlight: int(m.Config.IngressInFlight), Leases: leases, Pacer: pacer,
		Scripts: scriptstore.NewFetch(dpool),
	}
	if m.Config.SecretKeyFile != "" { // notifications on: remote scripts' sendNotify (notify.go)
		cfg.Notify = notifystore.NewRelay(dpool, notifykit.Policy{}, nil, m.kickNotify)
	}
	srv, err := ingress.New(cfg)
	if err != nil {
		return err
	}
	if err := srv.Start(m.Config.IngressListen); err != nil {
		return err
	}
	m.mu.Lock()
	m.ingress.srv = srv
	m.mu.Unlock()
	return nil
}

// startReconciler revokes superseded credentials every
// CredentialReconcileMs (± 20 % jitter) on the admin pool.
func (m *Main) startReconciler(pub *publication.Publisher) {
	stop, done := make(chan struct{}), make(chan struct{})
	every := time.Duration(m.Config.CredentialReconcileMs) * time.Millisecond
	go func() {
		defer close(done)
		for {
			jitter := time.Duration(rand.Int64N(int64(every)/5+1)) - every/10
			select {
			case <-stop:
				return
			case <-time.After(every + jitter):
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			n, err := pub.ReconcileCredentials(ctx)
			cancel()
			switch {
			case err != nil:
				m.log.Warn("credential reconciler", "err", err)
			case n > 0:
				m.log.Info("superseded worker credentials revoked", "count", n)
			}
		}
	}()
	m.mu.Lock()
	m.ingress.stopRecon, m.ingress.reconDone = stop, done
	m.mu.Unlock()
}

// stopIngress stops the listener (in-flight requests get until ctx ends),
// the reconciler and the ingress pool.
func (m *Main) stopIngress(ctx context.Context) error {
	m.mu.Lock()
	parts := m.ingress
	m.ingress = ingressParts{}
	m.mu.Unlock()
	var err error
	if parts.srv != nil {
		if serr := parts.srv.Shutdown(ctx); serr != nil {
			err = fmt.Errorf("stop worker ingress: %w", serr)
		}
	}
	if parts.stopRecon != nil {
		close(parts.stopRecon)
		<-parts.reconDone
	}
	if parts.stopPacer != nil {
		parts.stopPacer() // its read has a 1 s timeout and ends with the context
		<-parts.pacerDone
	}
	for _, p := range []*pgxpool.Pool{parts.pool, parts.dispatch} {
		if p != nil {
			p.Close()
		}
	}
	return err
}

// Reload re-reads the worker ingress's TLS files (SIGHUP). Bad material is
// reported and the running context kept.
func (m *Main) Reload() error {
	m.mu.Lock()
	srv := m.ingress.srv
	m.mu.Unlock()
	if srv == nil {
		return nil
	}
	return srv.Reload()
}

// IngressAddr is the worker ingress's listen address ("" when not serving).
func (m *Main) IngressAddr() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.ingress.srv == nil {
		return ""
	}
	return m.ingress.srv.Addr()
}
