//go:build linux

package runner

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	qlenv "github.com/ql3/ql3/core/env"
	"github.com/ql3/ql3/core/run"
	"github.com/ql3/ql3/core/spec"
	"github.com/ql3/ql3/edge"
	"github.com/ql3/ql3/edge/envcrypt"
	"github.com/ql3/ql3/edge/sqlite"
)

// withEnvStore unlocks e's env store and rebuilds the runner on it.
func (e *env) withEnvStore() *env {
	e.t.Helper()
	kek, err := envcrypt.CreateKeyFile(filepath.Join(e.dir, envcrypt.DefaultKeyFileName))
	if err != nil {
		e.t.Fatal(err)
	}
	if err := e.store.UnlockEnv(context.Background(), kek); err != nil {
		e.t.Fatal(err)
	}
	e.r, err = New(Config{Store: e.store, Executor: e.exec, Logs: e.logs, StateDir: filepath.Join(e.dir, "runner"), Clock: e.clock, Envs: e.store})
	if err != nil {
		e.t.Fatal(err)
	}
	return e
}

func (e *env) envs(in ...edge.EnvInput) []qlenv.Entry {
	e.t.Helper()
	out, err := e.store.CreateEnvs(context.Background(), in, "test")
	if err != nil {
		e.t.Fatal(err)
	}
	return out
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestProcessSeesStoreEnv: two enabled A entries reach the process as
// A=v1&v2 in QingLong order, a disabled one is absent, an allowlist limits
// what a task sees, and the store beats the inline environment unless the
// task says inlineWins.
func TestProcessSeesStoreEnv(t *testing.T) {
	e := newEnv(t).withEnvStore()
	out := t.TempDir()
	e.envs(edge.EnvInput{Name: "A", Value: "v1", Enabled: true}, edge.EnvInput{Name: "A", Value: "v2", Enabled: true},
		edge.EnvInput{Name: "A", Value: "disabled", Enabled: false}, edge.EnvInput{Name: "B", Value: "bee", Enabled: true})
	script := func(file string) string {
		return `printf '%s|%s|%s' "$A" "${B-unset}" "${MODE-unset}" > ` + filepath.Join(out, file)
	}
	inline := func(c *spec.Command) { c.Environment = map[string]string{"B": "inline", "MODE": "m"} }
	all := e.task("all", shellTask(script("all"), inline))
	only := e.task("only", shellTask(script("only"), func(c *spec.Command) { inline(c); c.Env = &spec.EnvScope{Use: []string{"A"}} }))
	wins := e.task("wins", shellTask(script("wins"), func(c *spec.Command) { inline(c); c.Env = &spec.EnvScope{InlineWins: true} }))
	e.start()
	for _, task := range []edge.Task{all, only, wins} {
		r := e.runNow(task.ID)
		e.waitRun(r.ID, "succeeded", status(run.RunSucceeded))
	}
	for file, want := range map[string]string{"all": "v1&v2|bee|m", "only": "v1&v2|inline|m", "wins": "v1&v2|inline|m"} {
		if got := readFile(t, filepath.Join(out, file)); got != want {
			t.Errorf("%s: process saw %q, want %q", file, got, want)
		}
	}
}

// TestEditDuringRunKeepsItsEnv: the values (and the masking) of a running
// attempt are those of its start; the next run gets the edit.
func TestEditDuringRunKeepsItsEnv(t *testing.T) {
	e := newEnv(t).withEnvStore()
	dir := t.TempDir()
	fifo := filepath.Join(dir, "go")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	es := e.envs(edge.EnvInput{Name: "TOKEN", Value: "old-token-value", Enabled: true})
	task := e.task("t", shellTask(`echo started; read x < `+fifo+`; sh -c 'printf %s "$TOKEN"' > `+filepath.Join(dir, "seen")+`; echo "token=$TOKEN"`, nil))
	e.start()
	r := e.runNow(task.ID)
	e.waitLog(r.ID, 1, "started")
	v := "new-token-value"
	if _, err := e.store.UpdateEnv(context.Background(), es[0].ID, edge.EnvPatch{Value: &v}, "test"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(fifo, []byte("go\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	e.waitRun(r.ID, "succeeded", status(run.RunSucceeded))
	if got := readFile(t, filepath.Join(dir, "seen")); got != "old-token-value" {
		t.Fatalf("a child started after the edit saw %q", got)
	}
	if log := e.readLog(r.ID, 1); !strings.Contains(log, "token=***") || strings.Contains(log, "old-token") {
		t.Fatalf("log %q", log)
	}
	// The next run sees the edit.
	go func() { _ = os.WriteFile(fifo, []byte("go\n"), 0o600) }()
	r2 := e.runNow(task.ID)
	e.waitRun(r2.ID, "succeeded", status(run.RunSucceeded))
	if got := readFile(t, filepath.Join(dir, "seen")); got != v {
		t.Fatalf("the next run saw %q", got)
	}
}

// TestOutputMasked: a script printing the secret whole, split across two
// writes and inside a 1 MiB line: the stored log shows *** each time and
// the attempt records 3.
func TestOutputMasked(t *testing.T) {
	e := newEnv(t).withEnvStore()
	secret := "pt_key=Zx81-secret-cookie"
	e.envs(edge.EnvInput{Name: "JD_COOKIE", Value: secret + "&pt_key=second-account", Enabled: true})
	half := len(secret) / 2
	script := `printf 'whole %s\n' "$JD_COOKIE"` + // the joined value: one occurrence (both parts overlap it)
		`; printf 'split ` + secret[:half] + `'; printf '` + secret[half:] + `\n'` +
		`; head -c 524288 /dev/zero | tr '\0' x; printf '` + secret + `'; head -c 524288 /dev/zero | tr '\0' y; echo`
	task := e.task("leak", shellTask(script, nil))
	e.start()
	r := e.runNow(task.ID)
	e.waitRun(r.ID, "succeeded", status(run.RunSucceeded))
	log := e.readLog(r.ID, 1)
	if strings.Contains(log, "Zx81") || strings.Contains(log, "second-account") {
		t.Fatal("a secret reached the log")
	}
	if !strings.HasPrefix(log, "whole ***\nsplit ***\nxxx") || !strings.Contains(log, "x***y") {
		t.Fatalf("log starts %q", log[:min(len(log), 64)])
	}
	as := e.attempts(r.ID)
	if as[0].MaskedCount != 3 {
		t.Fatalf("masked count %d, want 3", as[0].MaskedCount)
	}
}

// TestEnvLimitFailsAttempt: an environment over 1 MiB (store + inline)
// fails the attempt as validation, naming the limit, without running it.
func TestEnvLimitFailsAttempt(t *testing.T) {
	e := newEnv(t).withEnvStore()
	big := strings.Repeat("v", qlenv.MaxValueBytes-64)
	for i := range 8 {
		e.envs(edge.EnvInput{Name: "V" + string(rune('A'+i)), Value: big, Enabled: true})
	}
	inline := map[string]string{}
	for i := range 2 {
		inline["I"+string(rune('A'+i))] = strings.Repeat("i", 8<<10)
	}
	marker := newMarker(t)
	task := e.task("big", shellTask(marker.cmd(), func(c *spec.Command) { c.Environment = inline }))
	e.start()
	r := e.runNow(task.ID)
	got := e.waitRun(r.ID, "failed", status(run.RunFailed))
	if got.ErrorClass != run.ErrorValidation || len(marker.lines(t)) != 0 {
		t.Fatalf("run %+v, executions %v", got, marker.lines(t))
	}
	if a := e.attempts(r.ID)[0]; !strings.Contains(a.Message, "1048576") {
		t.Fatalf("message %q", a.Message)
	}
}

// BenchmarkAttemptEnv: what the env store adds to an attempt's start —
// reading and decrypting the enabled entries, joining, composing the
// environment and building the masker — with 1,000 entries and none;
// "cold" is a start right after the store changed (no cached snapshot).
func BenchmarkAttemptEnv(b *testing.B) {
	for _, bc := range []struct {
		name string
		n    int
		cold bool
	}{{"entries=0", 0, false}, {"entries=1000", 1000, false}, {"entries=1000/cold", 1000, true}} {
		n := bc.n
		b.Run(bc.name, func(b *testing.B) {
			dir := b.TempDir()
			st, err := sqlite.Open(context.Background(), filepath.Join(dir, "edge.db"), sqlite.Options{})
			if err != nil {
				b.Fatal(err)
			}
			defer st.Close()
			kek, _ := envcrypt.CreateKeyFile(filepath.Join(dir, "env.key"))
			if err := st.UnlockEnv(context.Background(), kek); err != nil {
				b.Fatal(err)
			}
			in := make([]edge.EnvInput, n)
			for i := range in {
				in[i] = edge.EnvInput{Name: "COOKIE_" + string(rune('A'+i%26)), Value: "pt_key=" + strings.Repeat("k", 48) + itoa(i), Enabled: true}
			}
			if n > 0 {
				if _, err := st.CreateEnvs(context.Background(), in, "bench"); err != nil {
					b.Fatal(err)
				}
			}
			r := &Runner{cfg: Config{Envs: st}}
			c := edge.Claim{Revision: edge.TaskRevision{Spec: shellTask("true", nil)}}
			for b.Loop() {
				if bc.cold {
					r.envs.snap = nil
				}
				ae, err := r.resolveEnv(context.Background(), c)
				if err != nil {
					b.Fatal(err)
				}
				if n > 0 && ae.matcher.Len() == 0 {
					b.Fatal(errors.New("no secrets"))
				}
			}
		})
	}
}
