package controlplane

import (
	"context"
	"time"
)

// Ports of the control plane. postgres implements each one (with a
// compile-time assertion); adminapi, coordinator and ingress depend on
// them, never on postgres; app wires the implementations in. Errors are
// core/errs codes (not_found, conflict, invalid, unavailable, …), so no
// caller needs to know the database.

// Publication publishes projects, tasks and triggers (admin role):
// SERIALIZABLE, with expectedRevision and an optional mutationId for
// idempotent retries; every mutation writes its audit line in its own
// transaction.
type Publication interface {
	PublishProject(ctx context.Context, in ProjectInput) (Project, error)
	ArchiveProject(ctx context.Context, in ArchiveProjectInput) (Project, error)
	GetProject(ctx context.Context, ref string) (Project, error)
	ListProjects(ctx context.Context, page ListRequest) (ListPage[Project], error)

	PublishTask(ctx context.Context, in TaskInput) (Task, error)
	SetTaskEnabled(ctx context.Context, in TaskEnabledInput) (Task, error)
	GetTask(ctx context.Context, id string) (Task, error)
	ListTasks(ctx context.Context, projectID string, page ListRequest) (ListPage[Task], error)
	// FindTasks is ListTasks with a search q: a substring of the name, the
	// command or a label (core/find; "" lists every task).
	FindTasks(ctx context.Context, projectID, q string, page ListRequest) (ListPage[Task], error)

	PublishTrigger(ctx context.Context, in TriggerInput) (Trigger, error)
	DeleteTask(ctx context.Context, in DeleteInput) (Task, error)
	DeleteTrigger(ctx context.Context, in DeleteInput) (Trigger, error)
	GetTrigger(ctx context.Context, id string) (Trigger, error)
	ListTriggers(ctx context.Context, taskID string, page ListRequest) (ListPage[Trigger], error)
}

// RunReads reads Runs and their history (admin role).
type RunReads interface {
	ListRuns(ctx context.Context, f RunListFilter) (ListPage[Run], error)
	GetRun(ctx context.Context, id string) (Run, error)
	ListRunEvents(ctx context.Context, id string, afterSeq int64, limit int) ([]RunEvent, error)
}

// Workers registers workers and manages their credentials (admin role).
type Workers interface {
	RegisterWorker(ctx context.Context, in WorkerInput) (Worker, error)
	GetWorker(ctx context.Context, ref string) (Worker, error)
	ListWorkers(ctx context.Context, page ListRequest) (ListPage[Worker], error)
	IssueWorkerCredential(ctx context.Context, workerID string) (WorkerCredential, string, error)
	RotateWorkerCredentials(ctx context.Context, workerID string, graceMs *int64) (WorkerCredential, string, error)
	RevokeWorkerCredential(ctx context.Context, workerID, credentialID string) (WorkerCredential, error)
	ListWorkerCredentials(ctx context.Context, workerRef string) ([]WorkerCredential, error)
}

// Authentication resolves an admin API token (digest compared in constant
// time; the token text is never stored).
type Authentication interface {
	AuthenticateAPIToken(ctx context.Context, token string) (APIToken, error)
}

// APITokens creates, lists and revokes scoped admin API tokens (ADR
// 0060); scopes are core/access's native scopes, ttlMs 0 means no expiry.
type APITokens interface {
	CreateScopedAPIToken(ctx context.Context, name string, scopes []string, ttlMs int64) (APIToken, string, error)
	ListAPITokens(ctx context.Context) ([]APIToken, error)
	RevokeAPIToken(ctx context.Context, id string) (APIToken, error)
}

// AuditLog lists audit lines, newest first.
type AuditLog interface {
	ListAudit(ctx context.Context, f AuditFilter) (ListPage[AuditRecord], error)
}

// RunOperations are the operator's actions on Runs through the runtime
// role (ADR 0014): cancel, run now, why a Run waits, log reads and a
// worker's newest session.
type RunOperations interface {
	CancelRun(ctx context.Context, runRef, actor string) (CancelOutcome, error)
	RunNow(ctx context.Context, in RunNowInput) (RunNowResult, error)
	WaitReason(ctx context.Context, runRef string) (WaitReason, bool, error)
	WaitReasons(ctx context.Context, runRefs []string) (map[string]string, error)
	ReadLog(ctx context.Context, runRef string, attempt int, stream string, offset, limit int64) (LogRange, error)
	WorkerSession(ctx context.Context, workerRef string) (WorkerSession, bool, error)
}

// Scheduling is the cluster scheduler's storage (runtime role, ADR 0006 and
// 0013): the row-lease claim, the atomic admission, the earliest due
// instant, the lifecycle sweep and the publish wake-up. Times are the
// database's.
type Scheduling interface {
	// ClaimSchedules claims up to r.Budget due or uninitialised schedules.
	ClaimSchedules(ctx context.Context, r ClaimRequest) ([]ClaimedSchedule, error)
	// Admit commits a batch of decided occurrences in one SERIALIZABLE
	// transaction; ErrCommitUnknown when the outcome is unknown.
	Admit(ctx context.Context, batch []Admission, opts AdmitOptions) (AdmitResult, error)
	// AdmitThenClaim is Admit with the next claim in the same round trip.
	AdmitThenClaim(ctx context.Context, batch []Admission, opts AdmitOptions, next ClaimRequest) (AdmitResult, NextClaim, error)
	// NextDue is the delay until the earliest claimable schedule or live
	// claim expiry; ok is false when there is none.
	NextDue(ctx context.Context) (delay time.Duration, ok bool, err error)
	// Sweep runs one lifecycle sweep pass.
	Sweep(ctx context.Context, opts SweepOptions) (SweepReport, error)
	// ListenPublished calls wake(false) once it listens (a publish made
	// while it was not listening is not announced) and wake(true) on every
	// publish, until ctx ends or the listening session fails; listened says
	// whether it got as far as listening.
	ListenPublished(ctx context.Context, wake func(notified bool)) (listened bool, err error)
}
