package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/ql3/ql3/controlplane"
	"github.com/ql3/ql3/controlplane/adminapi"
	"github.com/ql3/ql3/controlplane/depapi"
	"github.com/ql3/ql3/controlplane/subapi"
	"github.com/ql3/ql3/core/qlimport"
	"github.com/ql3/ql3/core/subplan"
	"github.com/ql3/ql3/notifykit"
)

const fakeToken = "ql3c_0123456789abcdef_0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

// fakeAdminAPI answers every client command's request with a canned
// answer built from the admin API's own wire types, so a view that names a
// field the API does not send shows up here as a missing value.
func fakeAdminAPI(t *testing.T, skipped bool) string {
	t.Helper()
	exit := 3
	task := adminapi.TaskRecord{ID: "task-1", ProjectID: "proj-1", Name: "backup", Enabled: true, Revision: 2}
	trig := adminapi.Trigger{TriggerRecord: adminapi.TriggerRecord{ID: "trig-1", TaskID: "task-1", Name: "nightly",
		Revision: 1, Expression: "0 3 * * 7", TimeZone: "Europe/Berlin", Misfire: "skip", GraceMs: 30000, Enabled: true},
		NextFireAtMs: 1767150000000}
	worker := adminapi.WorkerView{WorkerRecord: adminapi.WorkerRecord{ID: "wk-1", Name: "edge-1", Status: "active",
		TLSIdentity: "spiffe://ql3/worker/edge-1"},
		Session: &controlplane.WorkerSession{SessionID: "s-1", Status: "open", Capacity: 4, LiveLeases: 1, AgentVersion: "v9"}}
	cred := controlplane.WorkerCredential{ID: "cred-1", WorkerID: "wk-1", Status: "active"}
	finished := adminapi.RunRecord{ID: "run-9", TaskID: "task-1", TaskName: "京东签到", Status: "failed", Origin: "cron", AttemptCount: 1, MaxAttempts: 1,
		ErrorClass: "exit_nonzero", Attempts: []controlplane.Attempt{{Number: 1, Status: "failed", ExitCode: &exit}}}
	now := adminapi.RunRecord{ID: "run-10", TaskID: "task-1", Status: "queued", Origin: "manual", AttemptCount: 1, MaxAttempts: 1}
	if skipped {
		now.Status, now.AttemptCount, now.FinishedAtMs = "cancelled", 0, 1767150000000
	}
	created := true
	app := controlplane.OpenApp{ID: "app-1", ProjectID: "proj-1", Name: "phone", ClientID: "abcdefghijkl", Scopes: []string{"envs", "crons"}}
	envEntry := adminapi.EnvEntry{ID: "env-1", Name: "COOKIE", Enabled: true, Remarks: "first account"}
	notifyChannel := notifykit.NotifyChannel{ID: "ch-1", Name: "tg", Kind: "telegram", Enabled: true,
		Settings: notifykit.PublicSettings{ChatID: "42", SecretsSet: []string{"token"}}}
	notifyRule := notifykit.NotifyRule{ID: "rule-1", Name: "failures", Kinds: []string{"failed"}, Channels: []string{"ch-1"}, Enabled: true}
	notifyDelivery := notifykit.NotifyDelivery{ID: 7, Kind: "test", ChannelID: "ch-1", Status: "delivered", Attempts: 1, LastStatus: 200}
	subView := subapi.SubscriptionView{ID: "sub-1", Name: "repo", Slug: "repo", Kind: "git", URL: "https://example.org/o/repo.git",
		Schedule: "0 4 * * *", TaskID: "task-2", LastCommit: "0123456789abcdef", LastPullAtMs: 1767150000000}
	dep := depapi.Dependency{Dependency: controlplane.Dependency{ID: "dep-1", Kind: "node", Name: "axios", Labels: map[string]string{"zone": "a"},
		Status: "installed"}, Installs: []controlplane.DependencyInstall{{WorkerID: "wk-1", WorkerName: "edge-1", Action: "install",
		RunID: "run-10", Status: "installed"}}}
	depAction := depapi.DependencyAction{Dependency: dep, Runs: []depapi.DependencyRun{{WorkerID: "wk-1", WorkerName: "edge-1", RunID: "run-10"}}}
	importInspection := controlplane.ImportInspection{From: "/ql/data", Digest: "sha256:ab", Plan: qlimport.Plan{Zone: "Asia/Shanghai",
		Tasks:  []qlimport.TaskPlan{{SourceID: 7, Class: qlimport.RequiresManual, Name: "boot", Reasons: []string{"@boot is not a schedule"}}},
		Counts: map[string]map[qlimport.Class]int{"tasks": {qlimport.RequiresManual: 1}}}}
	answers := map[string]any{
		// subcmd.go's commands
		"GET /api/v1/projects/ops/subscriptions":             subapi.SubscriptionList{Subscriptions: []subapi.SubscriptionView{subView}},
		"POST /api/v1/projects/ops/subscriptions":            subView,
		"DELETE /api/v1/projects/ops/subscriptions/sub-1":    nil,
		"POST /api/v1/projects/ops/subscriptions/sub-1/pull": adminapi.RunView{RunRecord: now, Created: &created},
		"POST /api/v1/projects/ops/subscriptions/sub-1/preview": controlplane.SubscriptionPreview{Commit: "0123abc",
			Changes: []subplan.Change{{Action: "add", Path: "a.js", Name: "A", Cron: "0 1 * * *"}}, Skipped: []controlplane.SubscriptionSkip{}},
		// notify.go's commands
		"GET /api/v1/notify/channels":            adminapi.List[notifykit.NotifyChannel]{Items: []notifykit.NotifyChannel{notifyChannel}},
		"POST /api/v1/notify/channels":           notifyChannel,
		"DELETE /api/v1/notify/channels/ch-1":    nil,
		"POST /api/v1/notify/channels/ch-1/test": notifyDelivery,
		"GET /api/v1/notify/rules":               adminapi.List[notifykit.NotifyRule]{Items: []notifykit.NotifyRule{notifyRule}},
		"POST /api/v1/notify/rules":              notifyRule,
		"DELETE /api/v1/notify/rules/rule-1":     nil,
		"GET /api/v1/notify/deliveries":          notifykit.DeliveryList{Items: []notifykit.NotifyDelivery{notifyDelivery}},
		// importcmd.go's commands
		"POST /api/v1/projects/ops/import/inspect": importInspection,
		"POST /api/v1/projects/ops/import/upload":  importInspection,
		"POST /api/v1/projects/ops/import/apply": controlplane.ImportResult{Status: "applied", ProjectID: "proj-1", Zone: "Asia/Shanghai", Tasks: 2, Envs: 3, Files: 1,
			Refused: []qlimport.FilePlan{{Path: "node_modules", Class: qlimport.RequiresManual, Reasons: []string{"install the dependencies"}}}},
		"GET /api/v1/audit": adminapi.List[controlplane.AuditRecord]{Items: []controlplane.AuditRecord{{ID: "a-1", ActorKind: "token",
			ActorID: "t-1", Action: "task.update", SubjectKind: "task", SubjectID: "task-1", Outcome: "ok"}}},
		"GET /api/v1/projects":                                  adminapi.List[adminapi.ProjectRecord]{Items: []adminapi.ProjectRecord{{ID: "proj-1", Name: "ops", Status: "active"}}},
		"GET /api/v1/projects/ops":                              adminapi.ProjectRecord{ID: "proj-1", Name: "ops", Status: "active"},
		"POST /api/v1/projects":                                 adminapi.ProjectRecord{ID: "proj-1", Name: "ops", Status: "active"},
		"POST /api/v1/projects/ops/archive":                     adminapi.ProjectRecord{ID: "proj-1", Name: "ops", Status: "archived"},
		"GET /api/v1/tasks":                                     adminapi.List[adminapi.Task]{Items: []adminapi.Task{{TaskRecord: task}}},
		"GET /api/v1/tasks/task-1":                              adminapi.Task{TaskRecord: task, Triggers: []adminapi.Trigger{trig}},
		"POST /api/v1/tasks":                                    adminapi.Task{TaskRecord: task, Triggers: []adminapi.Trigger{trig}},
		"PUT /api/v1/tasks/task-1":                              adminapi.Task{TaskRecord: task},
		"POST /api/v1/tasks/task-1/enable":                      adminapi.Task{TaskRecord: task},
		"POST /api/v1/tasks/task-1/disable":                     adminapi.Task{TaskRecord: task},
		"DELETE /api/v1/tasks/task-1":                           nil,
		"GET /api/v1/tasks/task-1/triggers":                     adminapi.List[adminapi.Trigger]{Items: []adminapi.Trigger{trig}},
		"POST /api/v1/tasks/task-1/triggers":                    trig,
		"PUT /api/v1/tasks/task-1/triggers/trig-1":              trig,
		"DELETE /api/v1/tasks/task-1/triggers/trig-1":           nil,
		"GET /api/v1/workers":                                   adminapi.List[adminapi.WorkerView]{Items: []adminapi.WorkerView{worker}},
		"GET /api/v1/workers/edge-1":                            worker,
		"POST /api/v1/workers":                                  worker.WorkerRecord,
		"GET /api/v1/workers/edge-1/credentials":                adminapi.List[controlplane.WorkerCredential]{Items: []controlplane.WorkerCredential{cred}},
		"POST /api/v1/workers/edge-1/credentials":               adminapi.IssuedCredential{WorkerCredential: cred, Credential: "ql3w_secret"},
		"POST /api/v1/workers/edge-1/credentials/rotate":        adminapi.IssuedCredential{WorkerCredential: cred, Credential: "ql3w_secret"},
		"POST /api/v1/workers/edge-1/credentials/cred-1/revoke": cred,
		"POST /api/v1/workers/edge-1/disable":                   worker,
		"GET /api/v1/runs":                                      adminapi.List[adminapi.RunListItem]{Items: []adminapi.RunListItem{{RunRecord: finished}, {RunRecord: now, WaitReason: "no_live_session"}}},
		"GET /api/v1/runs/run-9":                                adminapi.RunView{RunRecord: finished},
		"POST /api/v1/tasks/task-1/runs":                        adminapi.RunView{RunRecord: now, Created: &created},
		"POST /api/v1/runs/run-9/cancel":                        adminapi.RunView{RunRecord: finished},
		"GET /api/v1/projects/ops/envs":                         adminapi.EnvList{Items: []adminapi.EnvEntry{envEntry}, Total: 1},
		"POST /api/v1/projects/ops/envs":                        envEntry,
		"PATCH /api/v1/projects/ops/envs/env-1":                 envEntry,
		"DELETE /api/v1/projects/ops/envs/env-1":                nil,
		"POST /api/v1/projects/ops/envs/env-1/enable":           envEntry,
		"POST /api/v1/projects/ops/envs/env-1/disable":          envEntry,
		"POST /api/v1/projects/ops/envs/import":                 adminapi.ImportEnvResponse{Created: 1, Items: []adminapi.EnvEntry{envEntry}},
		"POST /api/v1/projects/ops/envs/export":                 adminapi.EnvExport{Format: "json", Entries: []adminapi.EnvExportItem{{Name: "COOKIE", Enabled: true}}},
		"GET /api/v1/projects/ops/scripts": adminapi.ScriptList{Entries: []controlplane.ScriptEntry{{Name: "lib", Kind: "dir"},
			{Name: "a.js", Kind: "file", Size: 3, SHA256: "ab"}}},
		"GET /api/v1/projects/ops/scripts/content": rawScript("hi\n"),
		"PUT /api/v1/projects/ops/scripts/content": adminapi.ScriptWritten{Path: "a.js", ETag: "ab", Size: 3, Created: true},
		"POST /api/v1/projects/ops/scripts/move":   adminapi.ScriptMoveRequest{From: "a.js", To: "b.js"},
		"DELETE /api/v1/projects/ops/scripts":      nil,
		"POST /api/v1/projects/ops/scripts/upload": controlplane.ScriptUploadResult{Files: 2, Folders: 1, Bytes: 9},
		"POST /api/v1/projects/ops/scripts/run":    adminapi.RunView{RunRecord: now, Created: &created},
		"GET /api/v1/apps":                         adminapi.List[controlplane.OpenApp]{Items: []controlplane.OpenApp{app}},
		"POST /api/v1/apps":                        adminapi.CreatedApp{OpenApp: app, ClientSecret: "s3cr3tS3cr3tS3cr3tS3cr3t"},
		"DELETE /api/v1/apps/app-1":                nil,
		// depcmd.go's commands
		"GET /api/v1/projects/ops/dependencies":                  depapi.DependencyList{Dependencies: []depapi.Dependency{dep}},
		"POST /api/v1/projects/ops/dependencies":                 depAction,
		"GET /api/v1/projects/ops/dependencies/dep-1":            dep,
		"DELETE /api/v1/projects/ops/dependencies/dep-1":         nil,
		"POST /api/v1/projects/ops/dependencies/dep-1/install":   depAction,
		"POST /api/v1/projects/ops/dependencies/dep-1/reinstall": depAction,
		"POST /api/v1/projects/ops/dependencies/dep-1/remove":    depAction,
		"POST /api/v1/projects/ops/dependencies/dep-1/cancel":    depAction,
		"GET /api/v1/projects/ops/dependencies/settings/node":    controlplane.DependencySettings{Kind: "node", Registry: "https://registry.npmmirror.com/"},
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		answer, ok := answers[r.Method+" "+r.URL.Path]
		if !ok {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusNotFound)
			_ = json.NewEncoder(w).Encode(adminapi.ErrorBody{Code: "not_found", Message: "no " + r.URL.Path})
			return
		}
		if answer == nil {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		if raw, ok := answer.(rawScript); ok {
			w.Header().Set("ETag", `"ab"`)
			_, _ = w.Write([]byte(raw))
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(answer)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// clientArgs are a command line for every client command against the fake.
func clientArgs(t *testing.T) map[string][]string {
	dir := t.TempDir()
	spec := filepath.Join(dir, "spec.json")
	if err := os.WriteFile(spec, []byte(`{"kind":"qinglong/command@v1","shell":{"command":"true"}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	valueFile := filepath.Join(dir, "value")
	if err := os.WriteFile(valueFile, []byte("COOKIE=v1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	settings := filepath.Join(dir, "settings.json")
	if err := os.WriteFile(settings, []byte(`{"kind":"telegram","token":"123:abc","chatId":"42"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	credDir := filepath.Join(dir, "cred")
	if err := os.Mkdir(credDir, 0o700); err != nil {
		t.Fatal(err)
	}
	return map[string][]string{
		"audit list":                {},
		"dep list":                  {"--project", "ops"},
		"dep add":                   {"--project", "ops", "--kind", "node", "--name", "axios", "--labels", "zone=a"},
		"dep show":                  {"--project", "ops", "--id", "dep-1"},
		"dep install":               {"--project", "ops", "--id", "dep-1"},
		"dep reinstall":             {"--project", "ops", "--id", "dep-1"},
		"dep remove":                {"--project", "ops", "--id", "dep-1"},
		"dep cancel":                {"--project", "ops", "--id", "dep-1"},
		"dep delete":                {"--project", "ops", "--id", "dep-1"},
		"dep settings":              {"--project", "ops", "--kind", "node"},
		"notify channels":           {"--project", "ops"},
		"notify channel-add":        {"--project", "ops", "--name", "tg", "--settings-file", settings},
		"notify channel-delete":     {"--project", "ops", "--id", "ch-1"},
		"notify rules":              {"--project", "ops"},
		"notify rule-add":           {"--project", "ops", "--name", "failures", "--channel", "ch-1"},
		"notify rule-delete":        {"--project", "ops", "--id", "rule-1"},
		"notify test":               {"--project", "ops", "--id", "ch-1"},
		"notify deliveries":         {"--project", "ops", "--status", "failed"},
		"project list":              {},
		"project get":               {"--id", "ops"},
		"project create":            {"--name", "ops"},
		"project archive":           {"--id", "ops"},
		"task list":                 {},
		"task get":                  {"--id", "task-1"},
		"task create":               {"--project", "ops", "--name", "backup", "--spec-file", spec},
		"task update":               {"--id", "task-1", "--expected-revision", "1", "--name", "backup", "--spec-file", spec},
		"task enable":               {"--id", "task-1"},
		"task disable":              {"--id", "task-1"},
		"task delete":               {"--id", "task-1"},
		"trigger list":              {"--task", "task-1"},
		"trigger create":            {"--task", "task-1", "--expression", "0 3 * * 7"},
		"trigger update":            {"--task", "task-1", "--id", "trig-1", "--expected-revision", "1", "--expression", "0 3 * * 7"},
		"trigger delete":            {"--task", "task-1", "--id", "trig-1"},
		"worker list":               {},
		"worker get":                {"--id", "edge-1"},
		"worker show":               {"--id", "edge-1"},
		"worker register":           {"--name", "edge-1"},
		"worker credentials":        {"--id", "edge-1"},
		"worker issue-credential":   {"--id", "edge-1"},
		"worker rotate-credentials": {"--id", "edge-1", "--credential-file", filepath.Join(credDir, "credential")},
		"worker revoke-credential":  {"--id", "edge-1", "--credential", "cred-1"},
		"worker disable":            {"--id", "edge-1"},
		"run list":                  {},
		"run show":                  {"--id", "run-9"},
		"run now":                   {"--task", "task-1"},
		"run cancel":                {"--id", "run-9"},
		"env list":                  {"--project", "ops"},
		"env add":                   {"--project", "ops", "--name", "COOKIE", "--value-file", valueFile},
		"env edit":                  {"--project", "ops", "--id", "env-1", "--remarks", "second account"},
		"env rm":                    {"--project", "ops", "--id", "env-1"},
		"env enable":                {"--project", "ops", "--id", "env-1"},
		"env disable":               {"--project", "ops", "--id", "env-1"},
		"env import":                {"--project", "ops", "--file", valueFile},
		"env export":                {"--project", "ops"},
		"script ls":                 {"--project", "ops"},
		"script cat":                {"--project", "ops", "--path", "a.js"},
		"script put":                {"--project", "ops", "--path", "a.js", "--file", spec},
		"script mv":                 {"--project", "ops", "--from", "a.js", "--to", "b.js"},
		"script rm":                 {"--project", "ops", "--path", "a.js"},
		"script upload":             {"--project", "ops", "--file", spec},
		"script run":                {"--project", "ops", "--path", "a.js"},
		"sub list":                  {"--project", "ops"},
		"sub add":                   {"--project", "ops", "--name", "repo", "--url", "https://example.org/o/repo.git"},
		"sub rm":                    {"--project", "ops", "--id", "sub-1"},
		"sub pull":                  {"--project", "ops", "--id", "sub-1"},
		"sub preview":               {"--project", "ops", "--id", "sub-1"},
		"app list":                  {"--project", "ops"},
		"app create":                {"--project", "ops", "--name", "phone", "--scopes", "envs,crons"},
		"app delete":                {"--id", "app-1"},
		"import inspect":            {"--project", "ops", "--from", "/ql/data", "--zone", "Asia/Shanghai"},
		"import apply":              {"--project", "ops", "--from", "/ql/data", "--plan", "sha256:ab"},
	}
}

// runClient runs one client command as ql3-control does: its flags and
// --json parsed from args, then its Run with the token from QL3_TOKEN.
func runClient(t *testing.T, server string, name string, args []string, extra ...string) (string, string, error) {
	t.Helper()
	cmd, ok := Commands()[name]
	if !ok {
		t.Fatalf("no client command %q", name)
	}
	var out bytes.Buffer
	c := &Client{Stdout: &out, Getenv: func(k string) string { return map[string]string{"QL3_TOKEN": fakeToken}[k] },
		Server: server, CheckToken: checkShape, Print: cmd.Print, Outcome: cmd.Outcome}
	if err := parseArgs(cmd, &c.Args, append(append([]string{}, args...), extra...)); err != nil {
		return out.String(), "", err
	}
	err := cmd.Run(c, context.Background())
	return out.String(), "", err
}

// parseArgs parses a command's flags (and --json when it prints text).
func parseArgs(cmd Command, a *Args, argv []string) error {
	fs := flag.NewFlagSet("client", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	if cmd.Flags != nil {
		cmd.Flags(fs, a)
	}
	if cmd.Print != nil {
		fs.BoolVar(&a.JSON, "json", false, "")
	}
	if err := fs.Parse(argv); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	return nil
}

// checkShape stands in for the app's token check: a ql3c_ token.
func checkShape(tok string) error {
	if !strings.HasPrefix(tok, "ql3c_") {
		return errors.New("malformed token")
	}
	return nil
}

// TestEveryClientCommandPrintsText (#27): every command of the admin API
// client prints text by default — a table with a header for a list, one
// line for a mutation, including the deletes whose answer is empty — and
// with --json the answer's JSON.
func TestEveryClientCommandPrintsText(t *testing.T) {
	server := fakeAdminAPI(t, false)
	argsOf := clientArgs(t)
	var names []string
	for name := range Commands() {
		if name != "run logs" {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	for _, name := range names {
		args, ok := argsOf[name]
		if !ok {
			t.Errorf("%s: no test command line; add one", name)
			continue
		}
		out, _, err := runClient(t, server, name, args)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if strings.TrimSpace(out) == "" || strings.HasPrefix(strings.TrimSpace(out), "{") {
			t.Errorf("%s printed %q, want text", name, out)
		}
		if strings.HasSuffix(name, " list") || name == "worker credentials" {
			if header, _, _ := strings.Cut(out, "\n"); header != strings.ToUpper(header) || !strings.Contains(header, "  ") {
				t.Errorf("%s: first line %q is not a table header", name, header)
			}
		}
		jsonOut, _, err := runClient(t, server, name, args, "--json")
		if err != nil {
			t.Errorf("%s --json: %v", name, err)
			continue
		}
		if strings.HasSuffix(name, " delete") || strings.HasSuffix(name, "-delete") || name == "env rm" { // empty answers
			if jsonOut != "" {
				t.Errorf("%s --json printed %q for an empty answer", name, jsonOut)
			}
			continue
		}
		if !json.Valid([]byte(jsonOut)) {
			t.Errorf("%s --json printed %q, not JSON", name, jsonOut)
		}
	}
}

// TestClientTextShowsTheFields: the tables and blocks carry what an
// operator looks for (the worker's session in one row instead of ~70 lines
// of JSON, a run's exit code from its latest attempt, a trigger's next
// fire, what a delete did).
func TestClientTextShowsTheFields(t *testing.T) {
	server := fakeAdminAPI(t, false)
	argsOf := clientArgs(t)
	cases := []struct {
		name string
		want []string
	}{
		{"worker list", []string{"ID  ", "NAME", "SESSION", "wk-1", "edge-1", "active", "open", "1/4", "v9"}},
		{"run list", []string{"EXIT", "run-9", "京东签到", "failed", "exit_nonzero", "run-10", "queued", "no_live_session"}},
		{"run show", []string{"run ", "run-9", "京东签到 (task-1)", "exit ", "3", "attempts:", "exit_nonzero"}},
		{"task get", []string{"task ", "backup", "triggers:", "0 3 * * 7", "Europe/Berlin", "nightly"}},
		{"trigger delete", []string{"deleted trigger trig-1 of task task-1"}},
		{"task delete", []string{"deleted task task-1"}},
		{"worker issue-credential", []string{"issued credential cred-1", "ql3w_secret"}},
		{"worker rotate-credentials", []string{"issued credential cred-1", "written to"}},
		{"run now", []string{"run run-10: queued"}},
	}
	for _, c := range cases {
		out, _, err := runClient(t, server, c.name, argsOf[c.name])
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		for _, w := range c.want {
			if !strings.Contains(out, w) {
				t.Errorf("%s output lacks %q:\n%s", c.name, w, out)
			}
		}
	}
	out, _, _ := runClient(t, server, "run list", nil)
	if lines := strings.Count(out, "\n"); lines != 3 {
		t.Errorf("run list of 2 runs printed %d lines, want a header and 2 rows:\n%s", lines, out)
	}
	out, _, _ = runClient(t, server, "worker rotate-credentials", argsOf["worker rotate-credentials"])
	if strings.Contains(out, "ql3w_") {
		t.Errorf("a credential written to a file was printed:\n%s", out)
	}
}

// TestRunNowSkipped (#27): run now on a forbid task with a Run active
// prints one word and the reason, and returns ErrRunSkipped (exit 8), also
// with --json.
func TestRunNowSkipped(t *testing.T) {
	server := fakeAdminAPI(t, true)
	out, _, err := runClient(t, server, "run now", []string{"--task", "task-1"})
	if !errors.Is(err, ErrRunSkipped) || !strings.Contains(out, "run run-10: skipped (concurrency_forbid") || strings.Contains(out, "cancelled") {
		t.Fatalf("run now skipped: %v %q", err, out)
	}
	out, _, err = runClient(t, server, "run now", []string{"--task", "task-1"}, "--json")
	if !errors.Is(err, ErrRunSkipped) || !json.Valid([]byte(out)) {
		t.Fatalf("run now skipped --json: %v %q", err, out)
	}
	out, _, _ = runClient(t, server, "run list", nil)
	if !strings.Contains(out, "concurrency_forbid") {
		t.Errorf("run list does not name the skip:\n%s", out)
	}
}

// rawScript is a script's bytes as the fake answers them (not JSON).
type rawScript string
