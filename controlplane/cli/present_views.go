package cli

import (
	"cmp"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"
)

// Views of the admin API's answers: only the wire fields the text printers
// show (unknown fields are ignored; --json prints everything).

type listView[T any] struct {
	Items      []T    `json:"items"`
	NextCursor string `json:"nextCursor"`
}

type projectView struct {
	ID           string `json:"id"`
	Name         string `json:"name"`
	Status       string `json:"status"`
	Version      int64  `json:"version"`
	CreatedAtMs  int64  `json:"createdAtMs"`
	ArchivedAtMs int64  `json:"archivedAtMs"`
}

type specView struct {
	Argv *struct {
		File string   `json:"file"`
		Args []string `json:"args"`
	} `json:"argv"`
	Shell *struct {
		Command string `json:"command"`
	} `json:"shell"`
	Concurrency string `json:"concurrency"`
	TimeoutMs   int64  `json:"timeoutMs"`
	Retry       *struct {
		MaxAttempts int `json:"maxAttempts"`
	} `json:"retry"`
}

func (s specView) command() string {
	switch {
	case s.Shell != nil:
		return "sh -c " + s.Shell.Command
	case s.Argv != nil:
		return strings.Join(append([]string{s.Argv.File}, s.Argv.Args...), " ")
	}
	return ""
}

type taskView struct {
	ID          string        `json:"id"`
	ProjectID   string        `json:"projectId"`
	Name        string        `json:"name"`
	Enabled     bool          `json:"enabled"`
	Revision    int64         `json:"revision"`
	Digest      string        `json:"digest"`
	Spec        specView      `json:"spec"`
	CreatedAtMs int64         `json:"createdAtMs"`
	UpdatedAtMs int64         `json:"updatedAtMs"`
	Triggers    []triggerView `json:"triggers"`
}

type triggerView struct {
	ID                string `json:"id"`
	TaskID            string `json:"taskId"`
	Name              string `json:"name"`
	Revision          int64  `json:"revision"`
	Expression        string `json:"expression"`
	TimeZone          string `json:"timeZone"`
	Misfire           string `json:"misfire"`
	GraceMs           int64  `json:"graceMs"`
	Enabled           bool   `json:"enabled"`
	NextFireAtMs      int64  `json:"nextFireAtMs"`
	LastScheduledAtMs int64  `json:"lastScheduledAtMs"`
}

type sessionView struct {
	SessionID        string `json:"sessionId"`
	Status           string `json:"status"`
	Expired          bool   `json:"expired"`
	Capacity         int    `json:"capacity"`
	LiveLeases       int    `json:"liveLeases"`
	CredentialID     string `json:"credentialId"`
	AgentVersion     string `json:"agentVersion"`
	HeartbeatAtMs    int64  `json:"heartbeatAtMs"`
	LeaseExpiresAtMs int64  `json:"leaseExpiresAtMs"`
	OpenedAtMs       int64  `json:"openedAtMs"`
}

type workerView struct {
	ID           string       `json:"id"`
	Name         string       `json:"name"`
	TLSIdentity  string       `json:"tlsIdentity"`
	Status       string       `json:"status"`
	CreatedAtMs  int64        `json:"createdAtMs"`
	DisabledAtMs int64        `json:"disabledAtMs"`
	Session      *sessionView `json:"session"`
}

type credentialView struct {
	ID            string `json:"id"`
	WorkerID      string `json:"workerId"`
	Status        string `json:"status"`
	CreatedAtMs   int64  `json:"createdAtMs"`
	ExpiresAtMs   int64  `json:"expiresAtMs"`
	RevokedAtMs   int64  `json:"revokedAtMs"`
	SupersededBy  string `json:"supersededBy"`
	RevokeAfterMs int64  `json:"revokeAfterMs"`
	RevokeReason  string `json:"revokeReason"`
	Credential    string `json:"credential"`
}

type auditView struct {
	AtMs        int64  `json:"atMs"`
	ActorKind   string `json:"actorKind"`
	ActorID     string `json:"actorId"`
	Action      string `json:"action"`
	SubjectKind string `json:"subjectKind"`
	SubjectID   string `json:"subjectId"`
	Outcome     string `json:"outcome"`
}

type attemptView struct {
	Number       int    `json:"number"`
	Status       string `json:"status"`
	WorkerID     string `json:"workerId"`
	ExitCode     *int   `json:"exitCode"`
	ErrorClass   string `json:"errorClass"`
	Message      string `json:"message"`
	StartedAtMs  int64  `json:"startedAtMs"`
	FinishedAtMs int64  `json:"finishedAtMs"`
}

type waitView struct {
	Reason       string         `json:"reason"`
	LiveSessions int            `json:"liveSessions"`
	Eligible     int            `json:"eligibleSessions"`
	FreeSlots    int            `json:"freeSlots"`
	Mismatch     map[string]int `json:"placementMismatch"`
	NotBeforeMs  int64          `json:"notBeforeMs"`
}

type runView struct {
	ID                  string        `json:"id"`
	TaskID              string        `json:"taskId"`
	TaskName            string        `json:"taskName"`
	TaskRevision        int64         `json:"taskRevision"`
	Origin              string        `json:"origin"`
	TriggerID           string        `json:"triggerId"`
	RerunOf             string        `json:"rerunOf"`
	IdempotencyKey      string        `json:"idempotencyKey"`
	ScheduledForMs      int64         `json:"scheduledForMs"`
	Status              string        `json:"status"`
	AttemptCount        int           `json:"attemptCount"`
	MaxAttempts         int           `json:"maxAttempts"`
	ExitCode            *int          `json:"exitCode"`
	CancelRequestedAtMs int64         `json:"cancelRequestedAtMs"`
	ErrorClass          string        `json:"errorClass"`
	ErrorMessage        string        `json:"errorMessage"`
	CreatedAtMs         int64         `json:"createdAtMs"`
	FinishedAtMs        int64         `json:"finishedAtMs"`
	Attempts            []attemptView `json:"attempts"`
	WaitReason          string        `json:"waitReason"`
	Created             *bool         `json:"created"`
	Waiting             *waitView     `json:"waiting"`
}

// skipped reports a Run the concurrency policy did not start: forbid
// admits it cancelled with no Attempt (ADR 0015), and nothing else ends a
// Run cancelled before its first Attempt.
func (r runView) skipped() bool { return r.Status == "cancelled" && r.AttemptCount == 0 }

// exitCode is the Run's exit code, else its latest Attempt's.
func (r runView) exitCode() *int {
	if r.ExitCode != nil || len(r.Attempts) == 0 {
		return r.ExitCode
	}
	return r.Attempts[len(r.Attempts)-1].ExitCode
}

type tokenView struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	Status      string `json:"status"`
	CreatedAtMs int64  `json:"createdAtMs"`
	ExpiresAtMs int64  `json:"expiresAtMs"`
	RevokedAtMs int64  `json:"revokedAtMs"`
}

// one decodes an answer of type T and prints it with show.
func one[T any](show func(w io.Writer, a Args, v T) error) Printer {
	return func(w io.Writer, a Args, data []byte) error {
		var v T
		if err := decode(data, &v); err != nil {
			return err
		}
		return show(w, a, v)
	}
}

// Printers are the text forms of the client commands, by command name.
func Printers() map[string]Printer {
	printers := map[string]Printer{
		"audit list": one(printAuditList),

		"project list":    one(printProjectList),
		"project get":     one(printProject),
		"project create":  one(said[projectView](func(p projectView) string { return "created project " + named(p.Name, p.ID) })),
		"project archive": one(said[projectView](func(p projectView) string { return "archived project " + named(p.Name, p.ID) })),

		"task list": one(printTaskList),
		"task get":  one(printTask),
		"task create": one(func(w io.Writer, _ Args, t taskView) error {
			fmt.Fprintf(w, "created task %s, revision %d\n", named(t.Name, t.ID), t.Revision)
			for _, tr := range t.Triggers {
				fmt.Fprintf(w, "  trigger %s: %s in %s\n", named(tr.Name, tr.ID), tr.Expression, tr.TimeZone)
			}
			return nil
		}),
		"task update": one(said[taskView](func(t taskView) string {
			return fmt.Sprintf("published task %s revision %d", named(t.Name, t.ID), t.Revision)
		})),
		"task enable":  one(said[taskView](func(t taskView) string { return "enabled task " + named(t.Name, t.ID) })),
		"task disable": one(said[taskView](func(t taskView) string { return "disabled task " + named(t.Name, t.ID) })),
		"task delete": func(w io.Writer, a Args, _ []byte) error {
			_, err := fmt.Fprintf(w, "deleted task %s (its waiting runs are cancelled by the next sweep; running ones finish)\n", a.id)
			return err
		},

		"trigger list": one(printTriggerList),
		"trigger create": one(said[triggerView](func(t triggerView) string {
			return fmt.Sprintf("created trigger %s of task %s: %s", named(t.Name, t.ID), t.TaskID, triggerSummary(t))
		})),
		"trigger update": one(said[triggerView](func(t triggerView) string {
			return fmt.Sprintf("published trigger %s revision %d: %s", named(t.Name, t.ID), t.Revision, triggerSummary(t))
		})),
		"trigger delete": func(w io.Writer, a Args, _ []byte) error {
			_, err := fmt.Fprintf(w, "deleted trigger %s of task %s\n", a.id, a.task)
			return err
		},

		"worker list": one(printWorkerList),
		"worker get":  one(printWorker),
		"worker show": one(printWorker),
		"worker register": one(said[workerView](func(wk workerView) string {
			s := "registered worker " + named(wk.Name, wk.ID)
			if wk.TLSIdentity != "" {
				s += ", tls identity " + wk.TLSIdentity
			}
			return s
		})),
		"worker disable": one(said[workerView](func(wk workerView) string {
			return "disabled worker " + named(wk.Name, wk.ID) + "; its credentials are revoked"
		})),
		"worker credentials":        one(printCredentialList),
		"worker issue-credential":   one(printIssuedCredential),
		"worker rotate-credentials": one(printIssuedCredential),
		"worker revoke-credential": one(said[credentialView](func(c credentialView) string {
			return "revoked credential " + c.ID + " of worker " + c.WorkerID
		})),

		"run list": one(printRunList),
		"run show": one(printRun),
		"run now":  one(printRunNow),
		"run cancel": one(func(w io.Writer, _ Args, r runView) error {
			if r.Status == "cancelled" || r.FinishedAtMs != 0 {
				_, err := fmt.Fprintf(w, "run %s: %s\n", r.ID, r.Status)
				return err
			}
			_, err := fmt.Fprintf(w, "run %s: cancel requested (%s); it stops at its worker's next heartbeat\n", r.ID, r.Status)
			return err
		}),

		"token list": one(func(w io.Writer, _ Args, list []tokenView) error {
			t := newTable(w, "ID", "NAME", "STATUS", "CREATED", "EXPIRES", "REVOKED")
			for _, k := range list {
				t.row(k.ID, k.Name, k.Status, fmtTime(k.CreatedAtMs), fmtTime(k.ExpiresAtMs), fmtTime(k.RevokedAtMs))
			}
			return t.end(w, "")
		}),
		"token revoke": one(said[tokenView](func(k tokenView) string { return "revoked API token " + named(k.Name, k.ID) })),
	}
	for name, p := range envPrinters() {
		printers[name] = p
	}
	for name, p := range scriptPrinters() { // scriptcmd.go
		printers[name] = p
	}
	for name, p := range appPrinters() {
		printers[name] = p
	}
	return printers
}

// said prints one line about a mutation's result.
func said[T any](line func(T) string) func(io.Writer, Args, T) error {
	return func(w io.Writer, _ Args, v T) error {
		_, err := fmt.Fprintln(w, line(v))
		return err
	}
}

// RunNowOutcome turns a skipped run-now into ErrRunSkipped, whatever the
// output form.
func RunNowOutcome(data []byte) error {
	var r runView
	if err := decode(data, &r); err != nil {
		return err
	}
	if r.skipped() {
		return ErrRunSkipped
	}
	return nil
}

func printRunNow(w io.Writer, _ Args, r runView) error {
	note := ""
	if r.Created != nil && !*r.Created {
		note = " (already requested with this idempotency key)"
	}
	var err error
	switch {
	case r.skipped():
		_, err = fmt.Fprintf(w, "run %s%s: skipped (concurrency_forbid: another run of the task is active)\n", r.ID, note)
	case r.Status == "created":
		_, err = fmt.Fprintf(w, "run %s%s: created (held: concurrency replace stops the active run first)\n", r.ID, note)
	default:
		_, err = fmt.Fprintf(w, "run %s%s: %s\n", r.ID, note, r.Status)
	}
	return err
}

func triggerSummary(t triggerView) string {
	s := fmt.Sprintf("%s in %s", t.Expression, t.TimeZone)
	if !t.Enabled {
		s += ", disabled"
	} else if t.NextFireAtMs != 0 {
		s += ", next fire " + fmtTime(t.NextFireAtMs)
	}
	return s
}

func printAuditList(w io.Writer, _ Args, page listView[auditView]) error {
	t := newTable(w, "AT", "ACTOR", "ACTION", "SUBJECT", "OUTCOME")
	for _, l := range page.Items {
		actor := l.ActorKind
		if l.ActorID != "" {
			actor += ":" + l.ActorID
		}
		subject := l.SubjectID
		if l.SubjectKind != "" {
			subject = l.SubjectKind + " " + l.SubjectID
		}
		t.row(fmtTime(l.AtMs), actor, l.Action, subject, l.Outcome)
	}
	return t.end(w, page.NextCursor)
}

func printProjectList(w io.Writer, _ Args, page listView[projectView]) error {
	t := newTable(w, "ID", "NAME", "STATUS", "CREATED")
	for _, p := range page.Items {
		t.row(p.ID, p.Name, p.Status, fmtTime(p.CreatedAtMs))
	}
	return t.end(w, page.NextCursor)
}

func printProject(w io.Writer, _ Args, p projectView) error {
	f := newFields(w)
	f.add("project", p.ID)
	f.add("name", p.Name)
	f.add("status", p.Status)
	f.add("version", fmt.Sprint(p.Version))
	f.add("created", fmtTime(p.CreatedAtMs))
	f.add("archived", fmtTime(p.ArchivedAtMs))
	return f.end()
}

func printTaskList(w io.Writer, _ Args, page listView[taskView]) error {
	t := newTable(w, "ID", "NAME", "PROJECT", "ENABLED", "REV", "COMMAND")
	for _, k := range page.Items {
		t.row(k.ID, k.Name, k.ProjectID, fmt.Sprint(k.Enabled), fmt.Sprint(k.Revision), oneLine(k.Spec.command(), 60))
	}
	return t.end(w, page.NextCursor)
}

func printTask(w io.Writer, _ Args, k taskView) error {
	f := newFields(w)
	f.add("task", k.ID)
	f.add("name", k.Name)
	f.add("project", k.ProjectID)
	f.add("enabled", fmt.Sprint(k.Enabled))
	f.add("revision", fmt.Sprint(k.Revision))
	f.add("command", k.Spec.command())
	f.add("concurrency", k.Spec.Concurrency)
	if k.Spec.TimeoutMs != 0 {
		f.add("timeout", fmt.Sprint(msDuration(k.Spec.TimeoutMs)))
	}
	if k.Spec.Retry != nil && k.Spec.Retry.MaxAttempts > 0 {
		f.add("max attempts", fmt.Sprint(k.Spec.Retry.MaxAttempts))
	}
	f.add("digest", k.Digest)
	f.add("updated", fmtTime(k.UpdatedAtMs))
	if err := f.end(); err != nil {
		return err
	}
	if len(k.Triggers) == 0 {
		_, err := fmt.Fprintln(w, "triggers: none")
		return err
	}
	fmt.Fprintln(w, "triggers:")
	return printTriggers(w, k.Triggers, "")
}

func printTriggerList(w io.Writer, _ Args, page listView[triggerView]) error {
	return printTriggers(w, page.Items, page.NextCursor)
}

func printTriggers(w io.Writer, list []triggerView, next string) error {
	t := newTable(w, "ID", "NAME", "EXPRESSION", "ZONE", "MISFIRE", "GRACE", "ENABLED", "REV", "NEXT FIRE")
	for _, tr := range list {
		t.row(tr.ID, tr.Name, tr.Expression, tr.TimeZone, tr.Misfire, fmt.Sprint(msDuration(tr.GraceMs)),
			fmt.Sprint(tr.Enabled), fmt.Sprint(tr.Revision), fmtTime(tr.NextFireAtMs))
	}
	return t.end(w, next)
}

func printWorkerList(w io.Writer, _ Args, page listView[workerView]) error {
	t := newTable(w, "ID", "NAME", "STATUS", "SESSION", "LEASES", "HEARTBEAT", "AGENT")
	for _, wk := range page.Items {
		session, leases, beat, agent := "none", "", "", ""
		if s := wk.Session; s != nil {
			session = s.Status + fmtBool(s.Expired, " (expired)", "")
			leases = fmt.Sprintf("%d/%d", s.LiveLeases, s.Capacity)
			beat, agent = fmtTime(s.HeartbeatAtMs), s.AgentVersion
		}
		t.row(wk.ID, wk.Name, wk.Status, session, leases, beat, agent)
	}
	return t.end(w, page.NextCursor)
}

func printWorker(w io.Writer, _ Args, wk workerView) error {
	f := newFields(w)
	f.add("worker", wk.ID)
	f.add("name", wk.Name)
	f.add("status", wk.Status)
	f.add("tls identity", wk.TLSIdentity)
	f.add("created", fmtTime(wk.CreatedAtMs))
	f.add("disabled", fmtTime(wk.DisabledAtMs))
	if s := wk.Session; s != nil {
		f.add("session", s.SessionID+" "+s.Status+fmtBool(s.Expired, " (expired)", ""))
		f.add("leases", fmt.Sprintf("%d of %d slots", s.LiveLeases, s.Capacity))
		f.add("heartbeat", fmtTime(s.HeartbeatAtMs))
		f.add("lease expires", fmtTime(s.LeaseExpiresAtMs))
		f.add("credential", s.CredentialID)
		f.add("agent", s.AgentVersion)
	} else {
		f.add("session", "none")
	}
	return f.end()
}

func printCredentialList(w io.Writer, _ Args, page listView[credentialView]) error {
	t := newTable(w, "ID", "STATUS", "CREATED", "EXPIRES", "REVOKED", "SUPERSEDED BY", "REVOKE AFTER", "REASON")
	for _, c := range page.Items {
		t.row(c.ID, c.Status, fmtTime(c.CreatedAtMs), fmtTime(c.ExpiresAtMs), fmtTime(c.RevokedAtMs), c.SupersededBy,
			fmtTime(c.RevokeAfterMs), c.RevokeReason)
	}
	return t.end(w, page.NextCursor)
}

// printIssuedCredential: the secret alone on the last line (as `token
// create` prints its token), or where --credential-file put it.
func printIssuedCredential(w io.Writer, a Args, c credentialView) error {
	if a.credentialFile != "" {
		_, err := fmt.Fprintf(w, "issued credential %s for worker %s, written to %s\n", c.ID, c.WorkerID, a.credentialFile)
		return err
	}
	_, err := fmt.Fprintf(w, "issued credential %s for worker %s; it is shown once, store it now:\n%s\n", c.ID, c.WorkerID, c.Credential)
	return err
}

func printRunList(w io.Writer, _ Args, page listView[runView]) error {
	t := newTable(w, "ID", "TASK", "STATUS", "ORIGIN", "SCHEDULED FOR", "ATTEMPTS", "EXIT", "REASON")
	for _, r := range page.Items {
		reason := r.WaitReason
		switch {
		case r.skipped():
			reason = "concurrency_forbid"
		case reason == "":
			reason = r.ErrorClass
		}
		t.row(r.ID, cmp.Or(r.TaskName, r.TaskID), r.Status, r.Origin, fmtTime(r.ScheduledForMs), fmt.Sprintf("%d/%d", r.AttemptCount, r.MaxAttempts),
			fmtExit(r.exitCode()), reason)
	}
	return t.end(w, page.NextCursor)
}

func printRun(w io.Writer, _ Args, r runView) error {
	f := newFields(w)
	f.add("run", r.ID)
	f.add("task", fmt.Sprintf("%s (revision %d)", named(r.TaskName, r.TaskID), r.TaskRevision))
	f.add("status", r.Status+fmtBool(r.skipped(), " (skipped: concurrency_forbid)", ""))
	f.add("origin", r.Origin)
	f.add("trigger", r.TriggerID)
	f.add("rerun of", r.RerunOf)
	f.add("scheduled for", fmtTime(r.ScheduledForMs))
	f.add("created", fmtTime(r.CreatedAtMs))
	f.add("finished", fmtTime(r.FinishedAtMs))
	f.add("attempts", fmt.Sprintf("%d of %d", r.AttemptCount, r.MaxAttempts))
	f.add("exit", fmtExit(r.exitCode()))
	f.add("error", strings.TrimSpace(r.ErrorClass+" "+r.ErrorMessage))
	f.add("cancel requested", fmtTime(r.CancelRequestedAtMs))
	f.add("key", r.IdempotencyKey)
	if wr := r.Waiting; wr != nil {
		f.add("waiting", waitSummary(*wr))
	}
	if err := f.end(); err != nil {
		return err
	}
	if len(r.Attempts) == 0 {
		return nil
	}
	fmt.Fprintln(w, "attempts:")
	t := newTable(w, "  #", "STATUS", "WORKER", "STARTED", "FINISHED", "EXIT", "ERROR", "MESSAGE")
	for _, a := range r.Attempts {
		t.row(fmt.Sprintf("  %d", a.Number), a.Status, a.WorkerID, fmtTime(a.StartedAtMs), fmtTime(a.FinishedAtMs),
			fmtExit(a.ExitCode), a.ErrorClass, oneLine(a.Message, 60))
	}
	return t.end(w, "")
}

func waitSummary(wr waitView) string {
	s := fmt.Sprintf("%s (%d live sessions, %d eligible, %d free slots", wr.Reason, wr.LiveSessions, wr.Eligible, wr.FreeSlots)
	if len(wr.Mismatch) > 0 {
		keys := make([]string, 0, len(wr.Mismatch))
		for k := range wr.Mismatch {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		parts := make([]string, len(keys))
		for i, k := range keys {
			parts[i] = fmt.Sprintf("%s %d", k, wr.Mismatch[k])
		}
		s += "; placement mismatch: " + strings.Join(parts, ", ")
	}
	if wr.NotBeforeMs != 0 {
		s += "; not before " + fmtTime(wr.NotBeforeMs)
	}
	return s + ")"
}

// msDuration renders milliseconds as a duration ("1h0m0s", "30s").
func msDuration(ms int64) time.Duration { return time.Duration(ms) * time.Millisecond }
