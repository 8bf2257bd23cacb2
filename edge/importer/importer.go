// Package importer moves a QingLong 2 installation into ql3-edge (ADR
// 0056): Inspect reads the data directory (edge/qlsource, never writing
// it) and returns the plan of core/qlimport; Apply recomputes the plan,
// refuses a digest that differs, stages the script files, commits every
// record with the ledger row in one transaction, then moves the staged
// files into the scripts folder. The ledger row is the switch: before its
// commit nothing is visible, after it a re-run (or the next start,
// Resume) finishes the files.
package importer

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/qlimport"
	"github.com/ql3/ql3/core/spec"
	"github.com/ql3/ql3/edge"
	"github.com/ql3/ql3/edge/scripts"
	"github.com/ql3/ql3/qlsource"
)

// Importer applies plans to one edge's store and scripts folder.
type Importer struct {
	Store  edge.ImportStore
	Folder *scripts.Folder
	// StagingDir holds staged script files between the stage and the move
	// (<data-dir>/import): same file system as the scripts folder, never
	// shown to users.
	StagingDir string
	// Hook, when set, is called at the named points of Apply (tests kill
	// the process there): "staging", "staged", "committed", "moved".
	Hook func(point string)
}

// Status of an apply.
const (
	StatusApplied  = "applied"
	StatusExisting = "existing"
)

// Result is what Apply did.
type Result struct {
	Status      string              `json:"status"` // applied | existing
	PlanDigest  string              `json:"planDigest"`
	Zone        string              `json:"zone"`
	Tasks       int                 `json:"tasks"`
	Envs        int                 `json:"envs"`
	Subs        int                 `json:"subscriptions"`
	Deps        int                 `json:"dependencies"`
	Files       int                 `json:"files"`
	Refused     []qlimport.FilePlan `json:"refusedFiles"` // files not copied, with the reasons
	Rows        []edge.ImportRow    `json:"rows"`         // what each source row became
	AppliedAtMs int64               `json:"appliedAtMs"`
	Warnings    []string            `json:"warnings"`
}

// Inspect reads the data directory from and plans its import for the
// legacy zone.
func Inspect(ctx context.Context, from, zone string) (qlimport.Plan, qlimport.Source, error) {
	if zone == "" {
		return qlimport.Plan{}, qlimport.Source{}, errs.Invalidf("zone", "is required: name the time zone QingLong ran in (e.g. Asia/Shanghai)")
	}
	if _, err := edge.LoadZone(zone); err != nil {
		return qlimport.Plan{}, qlimport.Source{}, errs.Prefix("", err)
	}
	src, err := qlsource.Read(ctx, from)
	if err != nil {
		return qlimport.Plan{}, qlimport.Source{}, err
	}
	p, err := qlimport.Inspect(src, zone, qlimport.Checks{
		Subscription: func(s qlimport.SubscriptionPlan) error {
			_, err := edge.CheckSubscription(SubscriptionOf(s, zone))
			return err
		},
		Dependency: func(d qlimport.DependencyPlan) error {
			_, err := edge.CheckDependency(DependencyOf(d))
			return err
		},
	})
	return p, src, err
}

// SubscriptionOf is the subscription record a created plan row becomes
// (core/qlimport.SubscriptionDef, shared with the control plane).
func SubscriptionOf(s qlimport.SubscriptionPlan, zone string) edge.NewSubscription {
	return qlimport.SubscriptionDef(s, zone)
}

// DependencyOf is the dependency record a created plan row becomes.
func DependencyOf(d qlimport.DependencyPlan) edge.NewDependency {
	return edge.NewDependency{Kind: d.Kind, Name: d.Name, Version: d.Version}
}

func (im *Importer) hook(point string) {
	if im.Hook != nil {
		im.Hook(point)
	}
}

// Apply imports from for zone if its plan's digest is digest. A digest in
// the ledger answers StatusExisting (finishing its files if a crash left
// them staged) and writes nothing else.
func (im *Importer) Apply(ctx context.Context, from, zone, digest, actor string) (Result, error) {
	if digest == "" {
		return Result{}, errs.Invalidf("plan", "is required: the digest inspect printed")
	}
	if rec, err := im.Store.ImportRecord(ctx, digest); err == nil {
		if err := im.finish(ctx, rec, actor); err != nil {
			return Result{}, err
		}
		return resultOf(StatusExisting, rec, nil), nil
	} else if errs.Code(err) != errs.NotFound {
		return Result{}, err
	}
	p, src, err := Inspect(ctx, from, zone)
	if err != nil {
		return Result{}, err
	}
	if p.Digest != digest {
		return Result{}, errs.E(errs.Conflict, "plan", "the source changed since it was inspected (plan %s, now %s): inspect again and review the new plan", digest, p.Digest)
	}
	batch, err := batchOf(p, src, from, actor)
	if err != nil {
		return Result{}, err
	}
	copied := copiedFiles(p)
	if err := im.checkDestination(copied); err != nil {
		return Result{}, err
	}
	batch.FilesPending = len(copied) > 0
	if batch.FilesPending {
		if err := im.stage(from, digest, copied); err != nil {
			return Result{}, err
		}
	}
	rec, existing, err := im.Store.ApplyImport(ctx, batch)
	if err != nil {
		return Result{}, err
	}
	im.hook("committed")
	if err := im.finish(ctx, rec, actor); err != nil {
		return Result{}, err
	}
	status := StatusApplied
	if existing {
		status = StatusExisting
	}
	return resultOf(status, rec, refusedFiles(p)), nil
}

func resultOf(status string, rec edge.ImportRecord, refused []qlimport.FilePlan) Result {
	r := Result{Status: status, PlanDigest: rec.PlanDigest, Zone: rec.Zone, Rows: rec.Rows, Refused: refused, AppliedAtMs: rec.AppliedAtMs}
	var sum summary
	_ = json.Unmarshal([]byte(rec.Summary), &sum)
	r.Files = sum.Files
	for _, row := range rec.Rows {
		switch row.Kind {
		case "task":
			r.Tasks++
		case "env":
			r.Envs++
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
		r.Rows = []edge.ImportRow{}
	}
	r.Warnings = []string{}
	return r
}

// summary is the ledger's summary column.
type summary struct {
	Counts map[string]map[qlimport.Class]int `json:"counts"`
	Files  int                               `json:"files"`
}

// batchOf turns the plan's created rows into the store's batch. Env
// values come from src (the plan never holds them); entries keep the
// plan's order, which is QingLong's within each name.
func batchOf(p qlimport.Plan, src qlimport.Source, from, actor string) (edge.ImportBatch, error) {
	sum, _ := json.Marshal(summary{Counts: p.Counts, Files: len(copiedFiles(p))})
	b := edge.ImportBatch{PlanDigest: p.Digest, Zone: p.Zone, Source: boundSource(from), Actor: actor, Summary: string(sum)}
	for _, t := range p.Tasks {
		if !t.Created() {
			continue
		}
		nt, err := TaskOf(t, p.Zone)
		if err != nil {
			return edge.ImportBatch{}, errs.Prefix(fmt.Sprintf("tasks[source %d]", t.SourceID), err)
		}
		b.Tasks = append(b.Tasks, edge.ImportTask{SourceID: t.SourceID, Task: nt})
	}
	values := make(map[int64]string, len(src.Envs))
	for _, e := range src.Envs {
		values[e.ID] = e.Value
	}
	for _, e := range p.Envs {
		if !e.Created() {
			continue
		}
		b.Envs = append(b.Envs, edge.ImportEnv{SourceID: e.SourceID, Entry: edge.EnvInput{Name: e.Name, Value: values[e.SourceID],
			Remarks: e.Remarks, Enabled: e.Enabled, Pinned: e.Pinned, Labels: e.Labels}})
	}
	for _, s := range p.Subscriptions {
		if s.Created() {
			b.Subscriptions = append(b.Subscriptions, edge.ImportSubscription{SourceID: s.SourceID, Subscription: SubscriptionOf(s, p.Zone)})
		}
	}
	for _, d := range p.Dependencies {
		if d.Created() {
			b.Dependencies = append(b.Dependencies, edge.ImportDependency{SourceID: d.SourceID, Dependency: DependencyOf(d)})
		}
	}
	drafts := make(map[int]string, len(src.ConfigExports))
	for _, c := range src.ConfigExports {
		drafts[c.Line] = c.Value
	}
	for _, d := range p.ConfigDrafts {
		if d.Class != qlimport.Lossless {
			continue
		}
		b.Envs = append(b.Envs, edge.ImportEnv{SourceID: -int64(d.Line), Entry: edge.EnvInput{Name: d.Name, Value: drafts[d.Line],
			Remarks: fmt.Sprintf("draft from config.sh line %d: enable it if tasks need it", d.Line), Enabled: false}})
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

// TaskOf is the edge task a created TaskPlan becomes: a script task
// {file, args} or a bash command, every schedule a trigger in the legacy
// zone, QingLong's concurrency and timeout.
func TaskOf(t qlimport.TaskPlan, zone string) (edge.NewTask, error) {
	c := spec.Command{Kind: spec.KindCommandV1, TimeoutMs: t.TimeoutMs, Concurrency: spec.ConcurrencyPolicy(t.Concurrency)}
	switch t.Kind {
	case "script":
		c.Script = &spec.Script{File: t.Script.File, Args: t.Script.Args}
	case "shell":
		c.Shell = &spec.Shell{Command: t.Shell, Shell: spec.ShellBash}
	default:
		return edge.NewTask{}, errs.Invalidf("kind", "a plan row of kind %q is not created", t.Kind)
	}
	nt := edge.NewTask{Name: t.Name, Spec: c.WithDefaults(), Enabled: t.Enabled, Labels: t.Labels}
	for _, s := range t.Schedules {
		// Triggers are on; a disabled QingLong task is a disabled task.
		nt.Triggers = append(nt.Triggers, edge.TriggerInput{Expression: s, TimeZone: zone, Enabled: true})
	}
	return nt, nil
}

func copiedFiles(p qlimport.Plan) []qlimport.FilePlan {
	var out []qlimport.FilePlan
	for _, f := range p.Files {
		if f.Copied() && !f.Dir {
			out = append(out, f)
		}
	}
	return out
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

// checkDestination refuses the apply when a file to copy exists in the
// scripts folder with other content (same content: nothing to do), or
// when the copy would exceed the folder's limits.
func (im *Importer) checkDestination(files []qlimport.FilePlan) error {
	if len(files) == 0 {
		return nil
	}
	tree, _, err := im.Folder.Tree("")
	if err != nil {
		return err
	}
	have := make(map[string]string, len(tree))
	var total int64
	for _, f := range tree {
		have[f.Path] = fmt.Sprintf("%x", f.SHA256)
		total += f.Size
	}
	var clash []string
	entries := len(tree)
	for _, f := range files {
		cur, ok := have[f.Path]
		switch {
		case ok && cur != f.SHA256:
			clash = append(clash, f.Path)
		case !ok:
			entries++
			total += f.Size
		}
	}
	if len(clash) > 0 {
		if len(clash) > 10 {
			clash = append(clash[:10], fmt.Sprintf("and %d more", len(clash)-10))
		}
		return errs.E(errs.Conflict, "files", "the scripts folder already has other files at %s: move them away or edit them, then apply again", strings.Join(clash, ", "))
	}
	if err := scriptsLimits(entries, total); err != nil {
		return err
	}
	return nil
}

// Resume finishes the files of every import a crash left pending (the
// edge calls it at start).
func (im *Importer) Resume(ctx context.Context, actor string) error {
	pending, err := im.Store.PendingImports(ctx)
	if err != nil {
		return err
	}
	for _, rec := range pending {
		if err := im.finish(ctx, rec, actor); err != nil {
			return err
		}
	}
	im.sweepStaging(ctx)
	return nil
}

// sweepStaging removes staged files of plans that never committed.
func (im *Importer) sweepStaging(ctx context.Context) {
	entries, err := os.ReadDir(im.StagingDir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), stageSuffix+".tmp") { // a stage a crash interrupted
			_ = os.Remove(filepath.Join(im.StagingDir, e.Name()))
			continue
		}
		digest, ok := digestOfStage(e.Name())
		if !ok {
			continue
		}
		if _, err := im.Store.ImportRecord(ctx, digest); errs.Code(err) == errs.NotFound {
			_ = os.Remove(filepath.Join(im.StagingDir, e.Name()))
		}
	}
}
