// Package subs runs subscriptions on the edge (ADR 0054): the engine that
// fetches and checks a tree is subfetch's (shared with the control
// plane); here the staged tree is swapped into scripts/<slug>/ in one
// rename, and the scripts' cron comments become tasks through
// core/scriptmeta and core/subplan.
package subs

import (
	"context"
	"fmt"
	"io"

	"github.com/ql3/ql3/subfetch"
)

// The engine's types and functions, under the names the edge used.
type (
	Source = subfetch.Source
	Stager = subfetch.Stager
	Limits = subfetch.Limits
	Skip   = subfetch.Skip
	Staged = subfetch.Staged
)

// DefaultLimits are the engine's.
var DefaultLimits = subfetch.DefaultLimits

// RemoveStale removes stage folders named prefix-* a killed pull left.
func RemoveStale(workDir, slug, prefix string) { subfetch.RemoveStale(workDir, slug, prefix) }

// PullJob is one pull as the system task's process runs it.
type PullJob struct {
	ScriptsRoot string
	WorkDir     string
	Slug        string
	Source      Source
	Git         string
	Limits      Limits
}

// Pull removes what a killed pull left, stages the source and swaps the
// staged tree into scripts/<slug>/. Whatever fails, the tree in place
// stays as it was. It returns the staged tree's commit and what it skipped.
func Pull(ctx context.Context, job PullJob, log io.Writer) (Staged, error) {
	RemoveStale(job.WorkDir, job.Slug, "stage")
	stager := &Stager{WorkDir: job.WorkDir, Git: job.Git, Limits: job.Limits, Log: log}
	st, err := stager.Stage(ctx, job.Slug, "stage", job.Source)
	if err != nil {
		return Staged{}, err
	}
	if err := ctx.Err(); err != nil {
		st.Discard()
		return Staged{}, err
	}
	if err := Swap(job.ScriptsRoot, job.WorkDir, job.Slug, st); err != nil {
		st.Discard()
		return Staged{}, err
	}
	fmt.Fprintf(log, "scripts/%s/ now holds %s\n", job.Slug, st.Commit)
	return st, nil
}
