package subrun_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/ql3/ql3/controlplane"
	"github.com/ql3/ql3/controlplane/pgtest"
	"github.com/ql3/ql3/controlplane/postgres"
	"github.com/ql3/ql3/controlplane/postgres/publication"
	"github.com/ql3/ql3/controlplane/postgres/scriptstore"
	"github.com/ql3/ql3/controlplane/postgres/substore"
	"github.com/ql3/ql3/controlplane/subrun"
	"github.com/ql3/ql3/core/subdef"
	"github.com/ql3/ql3/core/subplan"
	"github.com/ql3/ql3/subfetch/gittest"
)

type world struct {
	db      *pgtest.DB
	pub     *publication.Publisher
	scripts *scriptstore.Store
	subs    *substore.Store
	puller  *subrun.Puller
	project string
}

func newWorld(t *testing.T) *world {
	t.Helper()
	db := pgtest.NewDB(t)
	admin := db.Pool(t, postgres.RoleAdmin)
	w := &world{db: db, pub: publication.NewPublisher(admin, publication.PublisherOptions{}),
		scripts: scriptstore.New(admin), subs: substore.New(admin)}
	p, err := w.pub.PublishProject(context.Background(), controlplane.ProjectInput{Name: "subs"})
	if err != nil {
		t.Fatal(err)
	}
	w.project = p.ID
	w.puller = &subrun.Puller{Subs: w.subs, Trees: w.scripts, Tasks: w.pub, WorkDir: t.TempDir()}
	return w
}

func (w *world) subscribe(t *testing.T, url string) controlplane.Subscription {
	t.Helper()
	sub, err := w.subs.CreateSubscription(context.Background(), w.project, subdef.Def{Name: "repo", Slug: "repo", Kind: subdef.Git,
		URL: url, Branch: "main", AutoAdd: true, AutoRemove: true, Enabled: true, Filter: subplan.Filter{Extensions: []string{".js"}}})
	if err != nil {
		t.Fatal(err)
	}
	return sub
}

// tasks maps the project's live tasks' script files to "name|cron|enabled".
func (w *world) tasks(t *testing.T) map[string]string {
	t.Helper()
	ctx := context.Background()
	page, err := w.pub.ListTasks(ctx, w.project, controlplane.ListRequest{Limit: 200})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, task := range page.Items {
		if task.DeletedAtMs != 0 || task.Spec.Script == nil {
			continue
		}
		trs, err := w.pub.ListTriggers(ctx, task.ID, controlplane.ListRequest{})
		if err != nil {
			t.Fatal(err)
		}
		var crons []string
		for _, tr := range trs.Items {
			crons = append(crons, tr.Expression)
		}
		out[task.Spec.Script.File] = task.Name + "|" + strings.Join(crons, ",") + "|" + map[bool]string{true: "on", false: "off"}[task.Enabled]
	}
	return out
}

func (w *world) read(t *testing.T, path string) string {
	t.Helper()
	b, _, err := w.scripts.ReadScript(context.Background(), w.project, path)
	if err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	return string(b)
}

func actions(ch []subplan.Change) map[string]string {
	out := map[string]string{}
	for _, c := range ch {
		if c.Mutates() || c.Action == subplan.Diverged {
			out[c.Path] = c.Action
		}
	}
	return out
}

func same(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// TestPullsFollowTheRepository: the first pull publishes the tree under
// repo/ and creates a task per cron comment; after a commit that edits one
// cron, adds a script and deletes one, the second pull's plan is exactly
// that, the hand-edited task is left alone, and the audit lines name the
// subscription; a hostile tree then fails the pull with the reason in the
// log and the published folder stays as it was; a preview writes nothing.
func TestPullsFollowTheRepository(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newWorld(t)
	r := gittest.New(t)
	r.Write(map[string]string{
		"README.md":    "# scripts\n",
		"jd_bean.js":   "/*\ncron: 0 1 * * *\n*/\nconst $ = new Env('京豆');\n",
		"jd_fruit.js":  "// cron \"5 2 * * *\" script-path=jd_fruit.js, tag=东东农场\nconst $ = new Env('东东农场');\n",
		"lib/utils.js": "module.exports = {}\n",
		"hand.js":      "// 0 3 * * * hand.js\nconst $ = new Env('Hand');\n",
	})
	r.Commit("first")
	sub := w.subscribe(t, r.URL())

	var log bytes.Buffer
	res, err := w.puller.Pull(ctx, sub.ID, &log)
	if err != nil {
		t.Fatalf("first pull: %v\n%s", err, log.String())
	}
	if got, want := actions(res.Changes), map[string]string{"jd_bean.js": "add", "jd_fruit.js": "add", "hand.js": "add"}; !same(got, want) {
		t.Fatalf("first plan %v, want %v\n%s", got, want, log.String())
	}
	if got, want := w.tasks(t), map[string]string{
		"repo/jd_bean.js":  "京豆|0 1 * * *|on",
		"repo/jd_fruit.js": "东东农场|5 2 * * *|on",
		"repo/hand.js":     "Hand|0 3 * * *|on",
	}; !same(got, want) {
		t.Fatalf("tasks %v, want %v", got, want)
	}
	if got := w.read(t, "repo/lib/utils.js"); got != "module.exports = {}\n" {
		t.Fatalf("published utils.js %q", got)
	}

	// A person edits the task of hand.js (its timeout): it is diverged.
	page, _ := w.pub.FindTasks(ctx, w.project, "Hand", controlplane.ListRequest{})
	hand := page.Items[0]
	edited := hand.Spec
	edited.TimeoutMs = 60_000
	if _, err := w.pub.PublishTask(ctx, controlplane.TaskInput{TaskID: hand.ID, ExpectedRevision: hand.Revision, Name: hand.Name, Spec: edited}); err != nil {
		t.Fatal(err)
	}

	r.Write(map[string]string{
		"jd_bean.js": "/*\ncron: 30 6 * * *\n*/\nconst $ = new Env('京豆');\n",
		"jd_new.js":  "// cron: 0 9 * * *\nconst $ = new Env('新');\n",
		"hand.js":    "// 0 4 * * * hand.js\nconst $ = new Env('Hand');\n",
	})
	r.Git("rm", "--quiet", "jd_fruit.js")
	second := r.Commit("second")
	log.Reset()
	res, err = w.puller.Pull(ctx, sub.ID, &log)
	if err != nil {
		t.Fatalf("second pull: %v\n%s", err, log.String())
	}
	if got, want := actions(res.Changes), map[string]string{"jd_bean.js": "update", "jd_new.js": "add", "jd_fruit.js": "disable",
		"hand.js": "diverged"}; !same(got, want) {
		t.Fatalf("second plan %v, want %v\n%s", got, want, log.String())
	}
	if got, want := w.tasks(t), map[string]string{
		"repo/jd_bean.js":  "京豆|30 6 * * *|on",
		"repo/jd_fruit.js": "东东农场|5 2 * * *|off",
		"repo/hand.js":     "Hand|0 3 * * *|on",
		"repo/jd_new.js":   "新|0 9 * * *|on",
	}; !same(got, want) {
		t.Fatalf("tasks %v, want %v", got, want)
	}
	if !strings.Contains(log.String(), "kept repo/jd_fruit.js: a task still runs it") {
		t.Fatalf("the disabled task's script is not reported kept:\n%s", log.String())
	}
	var origin int64
	if err := w.db.Conn(t).QueryRow(ctx, `SELECT count(*) FROM ql3.audit_log WHERE actor_id = $1`,
		controlplane.SubscriptionOrigin(sub.ID)).Scan(&origin); err != nil || origin < 5 {
		t.Fatalf("audit lines with the subscription as origin: %d %v", origin, err)
	}
	// A third pull with nothing new changes nothing.
	res, err = w.puller.Pull(ctx, sub.ID, &log)
	if err != nil || len(actions(res.Changes)) != 1 || actions(res.Changes)["hand.js"] != "diverged" {
		t.Fatalf("idempotent pull: %v %v", actions(res.Changes), err)
	}

	// Hostile: an entry named ".." refuses the pull; repo/ stays.
	before := w.read(t, "repo/jd_bean.js")
	r.LiteralTree([2]string{"100644", "ok.js"}, [2]string{"100644", ".."})
	log.Reset()
	if _, err := w.puller.Pull(ctx, sub.ID, &log); err == nil || !strings.Contains(err.Error(), "is refused") {
		t.Fatalf("hostile tree: %v\n%s", err, log.String())
	}
	if got := w.read(t, "repo/jd_bean.js"); got != before {
		t.Fatalf("a failed pull changed the folder: %q", got)
	}
	if _, _, err := w.scripts.ReadScript(ctx, w.project, "repo/ok.js"); err == nil {
		t.Fatal("a failed pull published ok.js")
	}

	// Preview of a good commit: the plan, nothing written.
	r.Git("update-ref", "refs/heads/main", second)
	r.Git("reset", "--quiet", "--hard", second)
	r.Write(map[string]string{"jd_more.js": "// cron: 0 10 * * *\n"})
	r.Commit("third")
	pv, err := w.puller.Preview(ctx, sub.ID)
	if err != nil || actions(pv.Changes)["jd_more.js"] != "add" {
		t.Fatalf("preview: %+v %v", pv, err)
	}
	if _, _, err := w.scripts.ReadScript(ctx, w.project, "repo/jd_more.js"); err == nil {
		t.Fatal("a preview published jd_more.js")
	}
}
