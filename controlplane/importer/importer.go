// Package importer moves a QingLong 2 installation into a project of the
// cluster (ADR 0056 for the import, ADR 0063 for the cluster): Inspect
// reads the data directory (qlsource, never writing it) and returns the
// plan of core/qlimport — the edge's plan, classification and digest;
// Apply recomputes the plan, refuses a digest that differs and hands the
// whole of it — script files, tasks with triggers, env entries,
// dependency and subscription records — to the
// store's one transaction (controlplane.ImportStore), whose ledger row makes
// a replay answer existing. It links the root package, core and qlsource
// only; the store is PostgreSQL's (postgres/importstore).
package importer

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"

	"github.com/ql3/ql3/controlplane"
	"github.com/ql3/ql3/core/depcmd"
	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/qlimport"
	"github.com/ql3/ql3/core/spec"
	"github.com/ql3/ql3/core/subdef"
	"github.com/ql3/ql3/qlsource"
)

// Inspect reads the data directory from and plans its import into a
// project for the legacy zone.
func Inspect(ctx context.Context, from, zone string) (qlimport.Plan, qlimport.Source, error) {
	if zone == "" {
		return qlimport.Plan{}, qlimport.Source{}, errs.Invalidf("zone", "is required: name the time zone QingLong ran in (e.g. Asia/Shanghai)")
	}
	src, err := qlsource.Read(ctx, from)
	if err != nil {
		return qlimport.Plan{}, qlimport.Source{}, err
	}
	p, err := qlimport.Inspect(src, zone, qlimport.Checks{
		Subscription: func(s qlimport.SubscriptionPlan) error {
			_, err := subdef.Check(qlimport.SubscriptionDef(s, zone))
			return err
		},
		Dependency: func(d qlimport.DependencyPlan) error {
			_, err := depcmd.Check(depcmd.Dependency{Kind: d.Kind, Name: d.Name, Version: d.Version})
			return err
		},
	})
	return p, src, err
}

// SubscriptionTasks publishes an imported subscription's system task — its
// pulls, on its schedule — after the import's commit (subrun.Service). The
// subscription rows are in the transaction; their tasks go through the
// publication room's own, so a crash between the two leaves subscriptions
// without a task, which the next apply of the same plan (existing)
// publishes.
type SubscriptionTasks interface {
	PublishSystemTask(ctx context.Context, subscriptionID string) error
}

// Importer applies plans to the cluster's projects.
type Importer struct {
	Store    controlplane.ImportStore
	SubTasks SubscriptionTasks // nil: imported subscriptions get their task at their first pull
}

// Apply imports from into project for zone if its plan's digest is digest.
// A digest in the project's ledger answers existing and writes nothing.
func (im *Importer) Apply(ctx context.Context, projectID, from, zone, digest string) (controlplane.ImportResult, error) {
	if digest == "" {
		return controlplane.ImportResult{}, errs.Invalidf("plan", "is required: the digest inspect printed")
	}
	if rec, err := im.Store.ImportRecord(ctx, projectID, digest); err == nil {
		return im.publishSubscriptionTasks(ctx, resultOf(controlplane.ImportExisting, rec, nil)), nil
	} else if errs.Code(err) != errs.NotFound {
		return controlplane.ImportResult{}, err
	}
	p, src, err := Inspect(ctx, from, zone)
	if err != nil {
		return controlplane.ImportResult{}, err
	}
	if p.Digest != digest {
		return controlplane.ImportResult{}, errs.E(errs.Conflict, "plan", "the source changed since it was inspected (plan %s, now %s): inspect again and review the new plan", digest, p.Digest)
	}
	b, err := BatchOf(p, src, projectID, from)
	if err != nil {
		return controlplane.ImportResult{}, err
	}
	rec, existing, err := im.Store.ApplyImport(ctx, b)
	if err != nil {
		return controlplane.ImportResult{}, err
	}
	status := controlplane.ImportApplied
	if existing {
		status = controlplane.ImportExisting
	}
	return im.publishSubscriptionTasks(ctx, resultOf(status, rec, refusedFiles(p))), nil
}

// publishSubscriptionTasks publishes the system tasks of the result's
// subscriptions that have none yet; a failure is a warning (the import
// stands), naming the way to finish it.
func (im *Importer) publishSubscriptionTasks(ctx context.Context, r controlplane.ImportResult) controlplane.ImportResult {
	if im.SubTasks == nil {
		return r
	}
	for _, row := range r.Rows {
		if row.Kind != "subscription" {
			continue
		}
		if err := im.SubTasks.PublishSystemTask(ctx, row.TargetID); err != nil {
			r.Warnings = append(r.Warnings, fmt.Sprintf("subscription %s is imported, but its pull task was not published (%v): apply the same plan again, or pull it once", row.TargetID, err))
		}
	}
	return r
}

// summary is the ledger's summary column.
type summary struct {
	Counts map[string]map[qlimport.Class]int `json:"counts"`
	Files  int                               `json:"files"`
}

func resultOf(status string, rec controlplane.ImportRecord, refused []qlimport.FilePlan) controlplane.ImportResult {
	r := controlplane.ImportResult{Status: status, ProjectID: rec.ProjectID, PlanDigest: rec.PlanDigest, Zone: rec.Zone,
		Rows: rec.Rows, Refused: refused, AppliedAtMs: rec.AppliedAtMs, Warnings: []string{}}
	for _, row := range rec.Rows {
		switch row.Kind {
		case "task":
			r.Tasks++
		case "env":
			r.Envs++
		case "script":
			r.Files++
		case "subscription":
			r.Subs++
		case "dependency":
			r.Deps++
		}
	}
	if r.Refused == nil {
		r.Refused = []qlimport.FilePlan{}
	}
	if r.Rows == nil {
		r.Rows = []controlplane.ImportRow{}
	}
	return r
}

// BatchOf turns the plan's created rows into the store's batch: the files
// to copy (read from the source and checked against the plan when the
// transaction reads them), the tasks, the env entries with their values
// from src (the plan never holds them) in the plan's order — QingLong's
// within each name — then the config.sh drafts, disabled.
func BatchOf(p qlimport.Plan, src qlimport.Source, projectID, from string) (controlplane.ImportBatch, error) {
	dataDir := from
	var files []controlplane.ImportFile
	for i, f := range p.Files {
		if !f.Copied() || f.Dir {
			continue
		}
		files = append(files, controlplane.ImportFile{Index: int64(i), Path: f.Path, Size: f.Size, SHA256: f.SHA256,
			Read: func() ([]byte, bool, error) {
				cf, err := qlsource.OpenChecked(dataDir, f)
				if err != nil {
					return nil, false, err
				}
				defer cf.Close()
				data, err := cf.ReadAll()
				return data, cf.Executable, err
			}})
	}
	sum, _ := json.Marshal(summary{Counts: p.Counts, Files: len(files)})
	b := controlplane.ImportBatch{ProjectID: projectID, PlanDigest: p.Digest, Zone: p.Zone, Source: boundSource(from),
		Summary: string(sum), Files: files}
	for _, t := range p.Tasks {
		if !t.Created() {
			continue
		}
		in, err := TaskOf(t, p.Zone)
		if err != nil {
			return controlplane.ImportBatch{}, errs.Prefix(fmt.Sprintf("tasks[source %d]", t.SourceID), err)
		}
		b.Tasks = append(b.Tasks, controlplane.ImportTask{SourceID: t.SourceID, Task: in, Labels: t.Labels})
	}
	values := make(map[int64]string, len(src.Envs))
	for _, e := range src.Envs {
		values[e.ID] = e.Value
	}
	for _, e := range p.Envs {
		if e.Created() {
			b.Envs = append(b.Envs, controlplane.ImportEnv{SourceID: e.SourceID, Entry: controlplane.EnvInput{Name: e.Name,
				Value: values[e.SourceID], Remarks: e.Remarks, Enabled: e.Enabled, Pinned: e.Pinned, Labels: e.Labels}})
		}
	}
	for _, d := range p.Dependencies {
		if d.Created() {
			b.Deps = append(b.Deps, controlplane.ImportDependency{SourceID: d.SourceID,
				Dependency: controlplane.DependencyInput{ProjectID: projectID, Kind: d.Kind, Name: d.Name, Version: d.Version}})
		}
	}
	for _, sub := range p.Subscriptions {
		if sub.Created() {
			b.Subs = append(b.Subs, controlplane.ImportSubscription{SourceID: sub.SourceID, Subscription: qlimport.SubscriptionDef(sub, p.Zone)})
		}
	}
	drafts := make(map[int]string, len(src.ConfigExports))
	for _, c := range src.ConfigExports {
		drafts[c.Line] = c.Value
	}
	for _, d := range p.ConfigDrafts {
		if d.Class == qlimport.Lossless {
			b.Envs = append(b.Envs, controlplane.ImportEnv{SourceID: -int64(d.Line), Entry: controlplane.EnvInput{Name: d.Name,
				Value: drafts[d.Line], Remarks: fmt.Sprintf("draft from config.sh line %d: enable it if tasks need it", d.Line)}})
		}
	}
	return b, nil
}

func boundSource(from string) string {
	if abs, err := filepath.Abs(from); err == nil {
		from = abs
	}
	if len(from) > 4096 {
		from = from[:4096]
	}
	return from
}

// TaskOf is the cluster task a created TaskPlan becomes: a script task
// {file, args} or a bash command, every schedule a trigger in the legacy
// zone, QingLong's concurrency and timeout. A disabled QingLong task is a
// disabled task whose triggers are disabled too (the cluster refuses an
// enabled trigger under a disabled task).
func TaskOf(t qlimport.TaskPlan, zone string) (controlplane.TaskInput, error) {
	c := spec.Command{Kind: spec.KindCommandV1, TimeoutMs: t.TimeoutMs, Concurrency: spec.ConcurrencyPolicy(t.Concurrency)}
	switch t.Kind {
	case "script":
		c.Script = &spec.Script{File: t.Script.File, Args: t.Script.Args}
	case "shell":
		c.Shell = &spec.Shell{Command: t.Shell, Shell: spec.ShellBash}
	default:
		return controlplane.TaskInput{}, errs.Invalidf("kind", "a plan row of kind %q is not created", t.Kind)
	}
	enabled := t.Enabled
	in := controlplane.TaskInput{Name: t.Name, Spec: c.WithDefaults(), Enabled: &enabled}
	for _, s := range t.Schedules {
		on := t.Enabled
		in.Triggers = append(in.Triggers, controlplane.TriggerInput{Expression: s, TimeZone: zone, Enabled: &on})
	}
	return in, nil
}

func refusedFiles(p qlimport.Plan) []qlimport.FilePlan {
	out := []qlimport.FilePlan{}
	for _, f := range p.Files {
		if !f.Copied() {
			out = append(out, f)
		}
	}
	return out
}
