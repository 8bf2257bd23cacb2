package schedule

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ql3/ql3/controlplane"
	"github.com/ql3/ql3/controlplane/postgres"
	"github.com/ql3/ql3/controlplane/postgres/sweep"
)

// SchedulerDB is what the Scheduler needs: a ql3_runtime *pgxpool.Pool.
type SchedulerDB interface {
	postgres.DB
	postgres.Acquirer
}

// Scheduler is controlplane.Scheduling on a runtime-role pool: the claim,
// the admission, the next due instant, the lifecycle sweep and the publish
// wake-up (LISTEN on ScheduleNotifyChannel).
type Scheduler struct{ db SchedulerDB }

// NewScheduler returns the scheduling port over db.
func NewScheduler(db SchedulerDB) *Scheduler { return &Scheduler{db: db} }

var _ SchedulerDB = (*pgxpool.Pool)(nil)

// ClaimSchedules is the package function ClaimSchedules on the pool.
func (s *Scheduler) ClaimSchedules(ctx context.Context, r controlplane.ClaimRequest) ([]controlplane.ClaimedSchedule, error) {
	return ClaimSchedules(ctx, s.db, r)
}

// Admit is the package function Admit on the pool.
func (s *Scheduler) Admit(ctx context.Context, batch []controlplane.Admission, opts controlplane.AdmitOptions) (controlplane.AdmitResult, error) {
	return Admit(ctx, s.db, batch, opts)
}

// AdmitThenClaim is the package function AdmitThenClaim on the pool.
func (s *Scheduler) AdmitThenClaim(ctx context.Context, batch []controlplane.Admission, opts controlplane.AdmitOptions,
	next controlplane.ClaimRequest) (controlplane.AdmitResult, controlplane.NextClaim, error) {
	return AdmitThenClaim(ctx, s.db, batch, opts, next)
}

// NextDue is the package function NextDue on the pool.
func (s *Scheduler) NextDue(ctx context.Context) (time.Duration, bool, error) {
	return NextDue(ctx, s.db)
}

// Sweep is sweep.Sweep on the pool.
func (s *Scheduler) Sweep(ctx context.Context, opts controlplane.SweepOptions) (controlplane.SweepReport, error) {
	return sweep.Sweep(ctx, s.db, opts)
}

// ListenPublished LISTENs on one hijacked connection until it fails or ctx
// ends (controlplane.Scheduling).
func (s *Scheduler) ListenPublished(ctx context.Context, wake func(notified bool)) (listened bool, err error) {
	pc, err := s.db.Acquire(ctx)
	if err != nil {
		return false, postgres.Translate(err)
	}
	// A LISTENing session must never go back to the pool.
	conn := pc.Hijack()
	raw := conn.PgConn().Conn()
	defer func() {
		// Give the Terminate message a short, fresh deadline (the read
		// below may have ended by an expired one).
		_ = raw.SetDeadline(time.Now().Add(listenCloseTimeout))
		_ = conn.Close(context.Background())
	}()
	// The caller's stop ends the wait by expiring the socket's deadline,
	// not through the driver's context cancellation: for a session that is
	// only waiting for a notification the server has no query to cancel,
	// so pgconn's cancel request changes nothing and the wait would end
	// only at its fallback deadline, 2 s per coordinator (issue 13 item
	// 16). A read that times out leaves pgconn's connection intact for the
	// Terminate above; it is never reused.
	stopRead := context.AfterFunc(ctx, func() { _ = raw.SetDeadline(time.Now()) })
	defer stopRead()
	if _, err := conn.Exec(ctx, "LISTEN "+ScheduleNotifyChannel); err != nil {
		return false, postgres.Translate(err)
	}
	// Notifications sent while we were not listening are gone: look now.
	wake(false)
	for ctx.Err() == nil {
		if _, err := conn.WaitForNotification(context.Background()); err != nil {
			return true, postgres.Translate(err)
		}
		wake(true)
	}
	return true, ctx.Err()
}

// listenCloseTimeout bounds the goodbye to the LISTEN session's server.
const listenCloseTimeout = time.Second
