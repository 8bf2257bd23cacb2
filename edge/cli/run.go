package cli

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"text/tabwriter"
	"time"

	"github.com/ql3/ql3/core/run"
	"github.com/ql3/ql3/edge"
	"github.com/ql3/ql3/edge/httpapi"
)

const runUsage = `Usage: ql3-edge run <now|list|show|cancel> [flags] [arguments]

  now      queue a run of a task now:  run now hello [--key K] [--wait]
  list     list runs, newest first:    run list [--task hello] [--status failed,lost]
  show     show a run, its attempts and its events
  cancel   cancel a queued run, or stop a running one (its whole process group)
`

func runCmd(ctx context.Context, env Env, args []string) error {
	return dispatch(ctx, env, "run", runUsage, args, map[string]subcommand{
		"now": runNow, "list": runList, "ls": runList, "show": runShow, "cancel": runCancel,
	})
}

func runPath(id string) string { return "/api/v1/runs/" + url.PathEscape(id) }

// waitPoll paces `run now --wait`; it paces I/O only.
const waitPoll = 250 * time.Millisecond

func runNow(ctx context.Context, env Env, args []string) error {
	fs := newFlagSet(env, "run now", "TASK [flags]",
		"Queue a run of TASK now. With --key, repeating the command returns the same run instead of\n"+
			"queueing another (safe to retry from scripts). The task's concurrency policy applies: under\n"+
			"forbid (the default), while another run of the task is active the run is not started and\n"+
			"the command prints \"skipped (concurrency_forbid)\" and exits 8.")
	var cf clientFlags
	cf.register(fs)
	key := fs.String("key", "", "idempotency key (1..128 printable ASCII)")
	rerun := fs.String("rerun-of", "", "record this run as a re-run of RUN")
	wait := fs.Bool("wait", false, "wait until the run ends; exit 7 unless it succeeded")
	pos, c, rctx, cancel, err := cf.connect(ctx, env, fs, args, 1, "TASK (id or name)")
	if err != nil {
		return err
	}
	defer cancel()
	req := request{method: http.MethodPost, path: taskPath(pos[0]) + "/runs"}
	if *key != "" {
		req.headers = map[string]string{"Idempotency-Key": *key}
	}
	if *rerun != "" {
		req.body = httpapi.RunNowRequest{RerunOf: *rerun}
	}
	var r httpapi.Run
	if err := c.do(rctx, req, &r); err != nil {
		return err
	}
	if r.Status == string(run.RunCancelled) && r.Reason == edge.SkipConcurrencyForbid {
		// Not started: another run of the task is active and its policy is
		// forbid. One word and the reason, and a distinct exit code.
		if cf.json {
			if err := printJSON(env.Stdout, r); err != nil {
				return err
			}
		} else {
			fmt.Fprintf(env.Stdout, "run %s: skipped (%s: another run of the task is active)\n", r.ID, r.Reason)
		}
		return &skippedError{id: r.ID, reason: r.Reason}
	}
	if !*wait {
		if cf.json {
			return printJSON(env.Stdout, r)
		}
		// "run <id>: queued"; a repeated idempotency key names the run it
		// already made, with that run's status now.
		note := ""
		if r.Created != nil && !*r.Created {
			note = " (already requested with this idempotency key)"
		}
		fmt.Fprintf(env.Stdout, "run %s%s: %s\n", r.ID, note, r.Status)
		return nil
	}
	for !runEnded(r) {
		t := time.NewTimer(waitPoll)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
		gctx, gcancel := withTimeout(ctx, cf.timeout)
		err := c.do(gctx, request{method: http.MethodGet, path: runPath(r.ID)}, &r)
		gcancel()
		if err != nil {
			return err
		}
	}
	if cf.json {
		if err := printJSON(env.Stdout, r); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(env.Stdout, "run %s %s (exit %s)\n", r.ID, r.Status, fmtExit(r.ExitCode))
	}
	if r.Status != string(run.RunSucceeded) {
		return &runFailedError{id: r.ID, status: r.Status}
	}
	return nil
}

func runList(ctx context.Context, env Env, args []string) error {
	fs := newFlagSet(env, "run list", "[flags]", "List runs, newest first.")
	var cf clientFlags
	cf.register(fs)
	task := fs.String("task", "", "only runs of this task (id or name)")
	trigger := fs.String("trigger", "", "only runs of this trigger id")
	status := fs.String("status", "", "only these statuses, comma-separated (queued,running,succeeded,failed,...)")
	limit := fs.Int("limit", 0, "page size (default 50, max 200)")
	cursor := fs.String("cursor", "", "continue after this cursor")
	_, c, ctx, cancel, err := cf.connect(ctx, env, fs, args, 0, "no arguments")
	if err != nil {
		return err
	}
	defer cancel()
	q := url.Values{}
	for k, v := range map[string]string{"task": *task, "trigger": *trigger, "status": *status, "cursor": *cursor} {
		if v != "" {
			q.Set(k, v)
		}
	}
	if *limit != 0 {
		q.Set("limit", fmt.Sprint(*limit))
	}
	var page httpapi.List[httpapi.Run]
	if err := c.do(ctx, request{method: http.MethodGet, path: "/api/v1/runs", query: q}, &page); err != nil {
		return err
	}
	if cf.json {
		return printJSON(env.Stdout, page)
	}
	tw := tabwriter.NewWriter(env.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tTASK\tSTATUS\tORIGIN\tSCHEDULED FOR\tATTEMPTS\tEXIT\tREASON")
	for _, r := range page.Items {
		reason := r.Reason
		if reason == "" {
			reason = r.ErrorClass
		}
		task := r.TaskName // every row carries its task's name (ADR 0050)
		if task == "" {
			task = r.TaskID
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d/%d\t%s\t%s\n", r.ID, task, r.Status, r.Origin,
			fmtTime(r.ScheduledForMs), r.AttemptCount, r.MaxAttempts, fmtExit(r.ExitCode), reason)
	}
	return endPage(env, tw, page.NextCursor)
}

func runShow(ctx context.Context, env Env, args []string) error {
	fs := newFlagSet(env, "run show", "RUN", "Show a run with its attempts and events.")
	var cf clientFlags
	cf.register(fs)
	pos, c, ctx, cancel, err := cf.connect(ctx, env, fs, args, 1, "RUN (id)")
	if err != nil {
		return err
	}
	defer cancel()
	var r httpapi.Run
	if err := c.do(ctx, request{method: http.MethodGet, path: runPath(pos[0])}, &r); err != nil {
		return err
	}
	var events httpapi.List[httpapi.RunEvent]
	if err := c.do(ctx, request{method: http.MethodGet, path: runPath(r.ID) + "/events"}, &events); err != nil {
		return err
	}
	if cf.json {
		return printJSON(env.Stdout, struct {
			httpapi.Run
			Events []httpapi.RunEvent `json:"events"`
		}{r, events.Items})
	}
	w := env.Stdout
	fmt.Fprintf(w, "run            %s\ntask           %s (revision %d)\nstatus         %s\norigin         %s\n",
		r.ID, r.TaskID, r.TaskRevision, r.Status, r.Origin)
	if r.TriggerID != "" {
		fmt.Fprintf(w, "trigger        %s (revision %d)\n", r.TriggerID, r.TriggerRevision)
	}
	fmt.Fprintf(w, "scheduled for  %s\ncreated        %s\nfinished       %s\nattempts       %d of %d\nconcurrency    %s\nexit           %s\n",
		fmtTime(r.ScheduledForMs), fmtTime(r.CreatedAtMs), fmtTime(r.FinishedAtMs), r.AttemptCount, r.MaxAttempts, r.Concurrency, fmtExit(r.ExitCode))
	if r.Reason != "" || r.ErrorClass != "" {
		fmt.Fprintf(w, "reason         %s %s\n", r.Reason, r.ErrorClass)
	}
	fmt.Fprintf(w, "key            %s\n", r.IdempotencyKey)
	if len(r.Attempts) > 0 {
		fmt.Fprintln(w, "attempts:")
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "  #\tSTATUS\tSTARTED\tFINISHED\tEXIT\tLOG\tMESSAGE")
		for _, a := range r.Attempts {
			logInfo := fmt.Sprintf("%dB", a.LogSize)
			if a.LogTruncated {
				logInfo += " (truncated)"
			}
			fmt.Fprintf(tw, "  %d\t%s\t%s\t%s\t%s\t%s\t%s\n", a.Number, a.Status, fmtTime(a.StartedAtMs), fmtTime(a.FinishedAtMs), fmtExit(a.ExitCode), logInfo, a.Message)
		}
		_ = tw.Flush()
	}
	if len(events.Items) > 0 {
		fmt.Fprintln(w, "events:")
		for _, e := range events.Items {
			fmt.Fprintf(w, "  %3d  %s  %s%s\n", e.Seq, fmtTime(e.AtMs), e.Type, payloadSummary(e.Payload))
		}
	}
	return nil
}

func payloadSummary(p run.Payload) string {
	s := ""
	add := func(k, v string) {
		if v != "" && v != "0" {
			s += " " + k + "=" + v
		}
	}
	add("attempt", fmt.Sprint(p.AttemptNumber))
	add("reason", p.Reason)
	add("error", string(p.ErrorClass))
	if p.ExitCode != nil {
		s += fmt.Sprintf(" exit=%d", *p.ExitCode)
	}
	add("signal", p.Signal)
	if p.RetryAtMs != 0 {
		add("retryAt", fmtTime(p.RetryAtMs))
	}
	if p.Missed != 0 {
		add("missed", fmt.Sprint(p.Missed))
	}
	return s
}

func runCancel(ctx context.Context, env Env, args []string) error {
	fs := newFlagSet(env, "run cancel", "RUN", "Cancel a queued run or stop a running one (SIGTERM to its process group, SIGKILL after the grace).")
	var cf clientFlags
	cf.register(fs)
	pos, c, ctx, cancel, err := cf.connect(ctx, env, fs, args, 1, "RUN (id)")
	if err != nil {
		return err
	}
	defer cancel()
	var r httpapi.Run
	if err := c.do(ctx, request{method: http.MethodPost, path: runPath(pos[0]) + "/cancel"}, &r); err != nil {
		return err
	}
	if cf.json {
		return printJSON(env.Stdout, r)
	}
	if run.RunStatus(r.Status).Terminal() {
		fmt.Fprintf(env.Stdout, "run %s: %s\n", r.ID, r.Status)
	} else {
		fmt.Fprintf(env.Stdout, "run %s: cancel requested (%s); the process is being stopped\n", r.ID, r.Status)
	}
	return nil
}

// runEnded reports whether r will not change by itself any more: terminal,
// or lost with no retry coming (FinishedAtMs is then set).
func runEnded(r httpapi.Run) bool {
	return run.RunStatus(r.Status).Terminal() || (r.Status == string(run.RunLost) && r.FinishedAtMs != 0)
}
