package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/ql3/ql3/core/openapi"
	"github.com/ql3/ql3/edge"
	"github.com/ql3/ql3/edge/deps"
	"github.com/ql3/ql3/edge/sqlite"
	"github.com/ql3/ql3/edge/subs"
)

// subsRoutesDoc is the subscriptions' and dependencies' part of the
// route table (subscriptions.go, dependencies.go).
func subsRoutesDoc() []openapi.Route {
	id := []openapi.Param{openapi.PathParam("id", "subscription id")}
	dep := []openapi.Param{openapi.PathParam("id", "dependency id")}
	kind := []openapi.Param{openapi.PathParam("kind", "node | python | linux")}
	runTok := "with the pull Run's token (QL3_NOTIFY_TOKEN), not the admin token"
	action := func(what string) openapi.Route {
		return openapi.Route{Method: "POST", Path: "/api/v1/dependencies/{id}/" + what, Summary: what + ": a Run of the dependency's system task", Params: dep,
			Responses: withErrors(map[int]openapi.Response{201: {Description: "started", Body: DependencyAction{}}}, 404, 409, 503)}
	}
	return []openapi.Route{
		{Method: "GET", Path: "/api/v1/subscriptions", Summary: "every subscription", Responses: withErrors(openapi.OK("subscriptions", SubscriptionList{}), 503)},
		{Method: "POST", Path: "/api/v1/subscriptions", Summary: "create a subscription and publish its system task", Request: SubscriptionRequest{},
			Responses: withErrors(map[int]openapi.Response{201: {Description: "created", Body: Subscription{}}}, 409, 413, 503)},
		{Method: "GET", Path: "/api/v1/subscriptions/{id}", Summary: "one subscription", Params: id, Responses: withErrors(openapi.OK("subscription", Subscription{}), 404, 503)},
		{Method: "PUT", Path: "/api/v1/subscriptions/{id}", Summary: "replace a subscription (its folder stays)", Params: id, Request: SubscriptionRequest{},
			Responses: withErrors(openapi.OK("replaced", Subscription{}), 404, 409, 413, 503)},
		{Method: "DELETE", Path: "/api/v1/subscriptions/{id}", Summary: "forget a subscription and its system task (the tasks it made and its folder stay)", Params: id,
			Responses: withErrors(map[int]openapi.Response{204: {Description: "deleted"}}, 404, 503)},
		{Method: "POST", Path: "/api/v1/subscriptions/{id}/pull", Summary: "pull now: a Run of the subscription's system task",
			Params:    append(id, openapi.Param{Name: "Idempotency-Key", In: "header", Type: "string", Description: "retry-safe key (printable ASCII)"}),
			Responses: withErrors(map[int]openapi.Response{201: {Description: "the pull's Run", Body: Run{}}}, 404, 503)},
		{Method: "POST", Path: "/api/v1/subscriptions/{id}/preview", Summary: "dry run: fetch into a private stage, plan the tasks, write nothing", Params: id,
			Responses: withErrors(openapi.OK("the plan", SubscriptionPreview{}), 404, 503)},
		{Method: "GET", Path: PullSourcePath, Summary: "what the pull's process fetches, " + runTok,
			Responses: withErrors(openapi.OK("the source", PullSource{}), 404, 503)},
		{Method: "POST", Path: PullAppliedPath, Summary: "the pull's process swapped the tree in: plan and apply the tasks, " + runTok, Request: PullAppliedRequest{},
			Responses: withErrors(openapi.OK("the applied plan", PullApplied{}), 404, 413, 503)},
		{Method: "GET", Path: "/api/v1/dependencies", Summary: "every dependency with the state of its last Run",
			Params: []openapi.Param{openapi.Query("kind", "string", "node | python | linux")}, Responses: withErrors(openapi.OK("dependencies", DependencyList{}), 503)},
		{Method: "POST", Path: "/api/v1/dependencies", Summary: "add a dependency and start its install (a Run)", Request: DependencyRequest{},
			Responses: withErrors(map[int]openapi.Response{201: {Description: "added, install started", Body: DependencyAction{}}}, 409, 413, 503)},
		{Method: "DELETE", Path: "/api/v1/dependencies/{id}", Summary: "forget a dependency (remove uninstalls)", Params: dep,
			Responses: withErrors(map[int]openapi.Response{204: {Description: "deleted"}}, 404, 503)},
		action("install"), action("reinstall"), action("remove"),
		{Method: "POST", Path: "/api/v1/dependencies/{id}/cancel", Summary: "cancel the dependency's running action", Params: dep,
			Responses: withErrors(map[int]openapi.Response{200: {Description: "the cancelled Run", Body: Run{}},
				202: {Description: "cancel requested: the runner ends the running action", Body: Run{}}}, 404, 409, 503)},
		{Method: "GET", Path: "/api/v1/dependencies/settings/{kind}", Summary: "a kind's registry mirror and proxy", Params: kind,
			Responses: withErrors(openapi.OK("settings", DependencySettings{}), 503)},
		{Method: "PUT", Path: "/api/v1/dependencies/settings/{kind}", Summary: "set a kind's registry mirror and proxy", Params: kind, Request: DependencySettings{},
			Responses: withErrors(openapi.OK("settings", DependencySettings{}), 413, 503)},
	}
}

// subsFor wires the subscription routes of a fixture.
func subsFor(t testing.TB, dir string, store *sqlite.Store, nc *NotifyConfig) *SubsConfig {
	t.Helper()
	root := filepath.Join(dir, "scripts")
	sv := subs.New(subs.Config{Store: store, ScriptsRoot: root, WorkDir: filepath.Join(dir, "subs"), Exe: "/usr/bin/ql3-edge"})
	dv := deps.New(deps.Config{Store: store, Places: deps.Places{ScriptsRoot: root, PythonVenv: filepath.Join(dir, "deps", "python")}})
	return &SubsConfig{Store: store, Subs: sv, Deps: dv, Tokens: nc.Tokens}
}

// gitRepo makes a repository with one script.
func gitRepo(t testing.TB) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "origin")
	os.MkdirAll(dir, 0o755)
	os.WriteFile(filepath.Join(dir, "a.js"), []byte("// cron: 5 8 * * *\nconst $ = new Env('签到');\n"), 0o644)
	for _, args := range [][]string{{"init", "--quiet", "--initial-branch=main"}, {"add", "-A"}, {"commit", "--quiet", "-m", "one"}} {
		cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL="+os.DevNull, "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@x", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@x")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	return "file://" + dir
}

// startRun moves a queued Run to running, as the runner does.
func (f *fixture) startRun(runID string) {
	f.t.Helper()
	ctx := context.Background()
	r, err := f.store.GetRun(ctx, runID)
	if err != nil {
		f.t.Fatal(err)
	}
	c, err := f.store.ClaimRun(ctx, r.ID, r.Version, f.clock.Now().UnixMilli())
	if err != nil {
		f.t.Fatal(err)
	}
	if _, err := f.store.MarkAttemptRunning(ctx, edge.AttemptRef{RunID: r.ID, Number: c.Attempt.Number},
		edge.AttemptStart{PID: 1, PGID: 1, StartedAtMs: f.clock.Now().UnixMilli()}); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) subsExamples() {
	url := gitRepo(f.t)
	var sub Subscription
	f.decode("POST", "/api/v1/subscriptions", `{"name":"脚本库","kind":"git","url":"`+url+`","branch":"main","extensions":[".js"],"schedule":"0 */6 * * *"}`,
		http.StatusCreated, &sub)
	f.call("POST", "/api/v1/subscriptions", `{"name":"脚本库","kind":"git","url":"`+url+`"}`)                         // 409
	f.call("POST", "/api/v1/subscriptions", `{"name":"x","kind":"git","url":"https://u:p@example.invalid/r.git"}`) // 400
	f.call("GET", "/api/v1/subscriptions", "")
	f.call("GET", "/api/v1/subscriptions/"+sub.ID, "")
	f.call("GET", "/api/v1/subscriptions/nope", "")
	f.call("PUT", "/api/v1/subscriptions/"+sub.ID, `{"name":"脚本库","kind":"git","url":"`+url+`","branch":"main","extensions":[".js"],"autoRemoveTasks":false}`)
	f.call("POST", "/api/v1/subscriptions/"+sub.ID+"/preview", "")
	var run Run
	f.decode("POST", "/api/v1/subscriptions/"+sub.ID+"/pull", "", http.StatusCreated, &run)
	f.call("GET", PullSourcePath, "") // the admin token is not a Run token: 401
	f.startRun(run.ID)
	tok := "Bearer " + f.notify.Tokens.Issue(run.ID)
	var src PullSource
	r := f.send("GET", PullSourcePath, "", "Authorization", tok)
	if r.status != http.StatusOK {
		f.t.Fatalf("pull source: %d %s", r.status, r.body)
	}
	decodeJSON(f.t, r.body, &src)
	if _, err := subs.Pull(context.Background(), subs.PullJob{ScriptsRoot: src.ScriptsDir, WorkDir: src.WorkDir, Slug: src.Slug,
		Source: subs.Source{Kind: src.Kind, URL: src.URL, Branch: src.Branch}}, &nopWriter{}); err != nil {
		f.t.Fatal(err)
	}
	var applied PullApplied
	r = f.send("POST", PullAppliedPath, `{"commit":"c1"}`, "Authorization", tok, "Content-Type", "application/json")
	decodeJSON(f.t, r.body, &applied)
	if r.status != http.StatusOK || len(applied.Changes) != 1 || applied.Changes[0].Action != "add" || applied.Changes[0].Name != "签到" {
		f.t.Fatalf("applied: %d %s", r.status, r.body)
	}

	var act DependencyAction
	f.decode("POST", "/api/v1/dependencies", `{"kind":"node","name":"axios","version":"^1.6.0"}`, http.StatusCreated, &act)
	f.call("POST", "/api/v1/dependencies", `{"kind":"node","name":"--global"}`)
	f.call("POST", "/api/v1/dependencies/"+act.Dependency.ID+"/reinstall", "") // 409: the install is still queued
	f.call("POST", "/api/v1/dependencies/"+act.Dependency.ID+"/cancel", "")
	f.call("POST", "/api/v1/dependencies/"+act.Dependency.ID+"/reinstall", "")
	f.call("POST", "/api/v1/dependencies/"+act.Dependency.ID+"/cancel", "")
	f.call("POST", "/api/v1/dependencies/"+act.Dependency.ID+"/remove", "")
	f.call("POST", "/api/v1/dependencies/"+act.Dependency.ID+"/cancel", "")
	f.call("POST", "/api/v1/dependencies/"+act.Dependency.ID+"/install", "")
	f.call("GET", "/api/v1/dependencies?kind=node", "")
	f.call("PUT", "/api/v1/dependencies/settings/node", `{"kind":"node","registry":"https://registry.npmmirror.com","proxy":""}`)
	f.call("GET", "/api/v1/dependencies/settings/node", "")
	f.call("DELETE", "/api/v1/dependencies/"+act.Dependency.ID, "")
	f.call("DELETE", "/api/v1/dependencies/"+act.Dependency.ID, "")
	f.call("DELETE", "/api/v1/subscriptions/"+sub.ID, "")
}

type nopWriter struct{}

func (nopWriter) Write(p []byte) (int, error) { return len(p), nil }

func decodeJSON(t testing.TB, b []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("decoding %s: %v", b, err)
	}
}
