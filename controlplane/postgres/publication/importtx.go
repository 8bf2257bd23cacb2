package publication

import (
	"context"
	"fmt"
	"sync"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/ql3/ql3/controlplane"
	"github.com/ql3/ql3/core/canonjson"
	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/find"
)

// MaxImportTriggers bounds the triggers of one imported task (a QingLong
// task's schedule and its extra_schedules, core/qlimport's bound).
const MaxImportTriggers = 64

// CreateTaskTx creates a task with its triggers and labels inside the
// caller's transaction (the cluster import, ADR 0063), with the same
// checks and the same audit line (task.create) as PublishTask; only the
// bound of inline triggers is the import's. No mutation id: the import's
// ledger is its replay.
func (p *Publisher) CreateTaskTx(ctx context.Context, tx pgx.Tx, in controlplane.TaskInput, labels []string) (controlplane.Task, error) {
	if err := checkPubName("name", &in.Name); err != nil {
		return controlplane.Task{}, err
	}
	projectID, err := parsePubID("projectId", in.ProjectID)
	if err != nil {
		return controlplane.Task{}, err
	}
	cs, err := compileSpec(in.Spec)
	if err != nil {
		return controlplane.Task{}, err
	}
	ls, err := find.CheckLabels(labels)
	if err != nil {
		return controlplane.Task{}, err
	}
	if len(in.Triggers) > MaxImportTriggers {
		return controlplane.Task{}, errs.Invalidf("triggers", "at most %d, got %d", MaxImportTriggers, len(in.Triggers))
	}
	reqs := make([]triggerRequest, 0, len(in.Triggers))
	for i, ti := range in.Triggers {
		r, err := p.normalizeTrigger(ti)
		if err != nil {
			return controlplane.Task{}, errs.Prefix(fmt.Sprintf("triggers[%d]", i), err)
		}
		reqs = append(reqs, r)
	}
	t, err := createTask(ctx, tx, projectID, in.Name, in.Enabled == nil || *in.Enabled, cs)
	if err != nil {
		return t, err
	}
	taskID, err := uuid.Parse(t.ID)
	if err != nil {
		return t, err
	}
	if len(ls) > 0 {
		if err := writeTaskLabels(ctx, tx, taskID, projectID, t.Name, t.Spec, ls); err != nil {
			return t, err
		}
		t.Labels = ls
	}
	for i, tr := range reqs {
		rec, err := createTrigger(ctx, tx, taskID, tr, p.allowDupes)
		if err != nil {
			return t, errs.Prefix(fmt.Sprintf("triggers[%d]", i), err)
		}
		t.Triggers = append(t.Triggers, rec)
	}
	sk, sid, details, _ := auditSubjectOf(t)
	return t, InsertAudit(ctx, tx, mutationTaskCreate, sk, sid, details)
}

// treeMemo remembers the tree digests SnapshotScriptTree recorded in one
// transaction whose scripts folder no longer changes (the import writes its
// files first, then creates thousands of script tasks in a few folders:
// each folder is read and digested once, not once per task).
type treeMemo struct {
	mu sync.Mutex
	m  map[string]canonjson.Digest
}

type treeMemoKey struct{}

// WithTreeMemo returns ctx remembering script tree snapshots. The caller
// promises that the scripts folder does not change in its transaction
// while ctx is used (a retried transaction gets a fresh memo).
func WithTreeMemo(ctx context.Context) context.Context {
	return context.WithValue(ctx, treeMemoKey{}, &treeMemo{m: map[string]canonjson.Digest{}})
}

func treeMemoOf(ctx context.Context) *treeMemo {
	m, _ := ctx.Value(treeMemoKey{}).(*treeMemo)
	return m
}

func (t *treeMemo) get(project uuid.UUID, dir string) (canonjson.Digest, bool) {
	if t == nil {
		return canonjson.Digest{}, false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	d, ok := t.m[project.String()+"/"+dir]
	return d, ok
}

func (t *treeMemo) put(project uuid.UUID, dir string, d canonjson.Digest) {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.m[project.String()+"/"+dir] = d
}
