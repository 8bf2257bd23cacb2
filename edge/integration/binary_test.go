//go:build linux

package integration

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ql3/ql3/edge/app"
	"github.com/ql3/ql3/edge/httpapi"
	"github.com/ql3/ql3/scripts/testio"
)

var (
	buildOnce sync.Once
	binTmpDir string // removed by TestMain
	binPath   string
	buildErr  error
	buildOut  []byte
)

// edgeBinary builds ql3-edge once per test process (TestMain removes it).
func edgeBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		binTmpDir, buildErr = os.MkdirTemp("", "ql3-edge-bin")
		if buildErr != nil {
			return
		}
		binPath = filepath.Join(binTmpDir, "ql3-edge")
		cmd := exec.Command("go", "build", "-o", binPath, "./cmd/ql3-edge")
		cmd.Dir = ".."
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		buildOut, buildErr = cmd.CombinedOutput()
	})
	if buildErr != nil {
		t.Fatalf("building ql3-edge: %v\n%s", buildErr, buildOut)
	}
	return binPath
}

// proc is a ql3-edge serve process.
type proc struct {
	t      *testing.T
	cmd    *exec.Cmd
	base   string
	done   chan struct{}
	stderr *testio.Buffer // the server's log, also copied to the test log
}

var listenLine = regexp.MustCompile(`API and panel: (http://[^/\s]+)/`)

// startBinary runs `ql3-edge serve` on dataDir and waits for its banner.
func startBinary(t *testing.T, dataDir string, extra ...string) *proc {
	t.Helper()
	// A short drain grace so a test's cleanup SIGTERM never waits long;
	// a test that wants another passes --drain-grace in extra (last wins).
	args := append([]string{"serve", "--data-dir", dataDir, "--listen", "127.0.0.1:0", "--kill-grace", "1s", "--drain-grace", "2s"}, extra...)
	cmd := exec.Command(edgeBinary(t), args...)
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "QL3_") {
			env = append(env, kv)
		}
	}
	cmd.Env = env
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	logBuf := &testio.Buffer{}
	cmd.Stderr = io.MultiWriter(testWriter{t}, logBuf)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &proc{t: t, cmd: cmd, done: make(chan struct{}), stderr: logBuf}
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if m := listenLine.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case found <- m[1]:
				default:
				}
			}
		}
		_, _ = io.Copy(io.Discard, stdout)
	}()
	go func() {
		_ = cmd.Wait()
		close(p.done)
	}()
	select {
	case p.base = <-found:
	case <-p.done:
		t.Fatal("ql3-edge exited before it listened")
	case <-time.After(waitLimit):
		_ = cmd.Process.Kill()
		t.Fatal("ql3-edge did not print its address")
	}
	t.Cleanup(func() { p.stop(syscall.SIGTERM) })
	return p
}

// stop signals the process and waits for it to exit.
func (p *proc) stop(sig syscall.Signal) {
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Signal(sig)
	select {
	case <-p.done:
	case <-time.After(waitLimit):
		_ = p.cmd.Process.Kill()
		<-p.done
		p.t.Errorf("ql3-edge did not exit on %v", sig)
	}
}

// client returns an in-process-style API helper bound to the binary.
func (p *proc) client(t *testing.T, dataDir string) *server {
	tok, err := app.ReadTokenFile(filepath.Join(dataDir, app.TokenFileName))
	if err != nil {
		t.Fatal(err)
	}
	return &server{t: t, base: p.base, token: tok, closed: true}
}

// TestKill9MidAttempt: ql3-edge is SIGKILLed while attempts run. After a
// restart: the plain run is lost (not retried, not run twice), the run
// whose policy retries lost attempts runs its second attempt once, a run
// still queued at the crash runs once, and the orphaned processes are gone.
func TestKill9MidAttempt(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	p := startBinary(t, data, "--max-concurrency", "2")
	c := p.client(t, data)

	c.createTask("sleeper", `{"kind":"qinglong/command@v1","argv":{"file":"sleep","args":["30"]}}`)
	c.createTask("retrier", shellSpec(`if [ "$QL3_ATTEMPT" = 1 ]; then exec sleep 30; fi; echo attempt $QL3_ATTEMPT`,
		`,"retry":{"maxAttempts":2,"retryOnLost":true}`))
	c.createTask("waiter", shellSpec(`echo ran`, ""))
	var sleeper, retrier, waiter httpapi.Run
	c.api("POST", "/api/v1/tasks/sleeper/runs", nil, 201, &sleeper)
	c.api("POST", "/api/v1/tasks/retrier/runs", nil, 201, &retrier)
	sleeperPID := c.waitRun(sleeper.ID, "to be running", attemptRunning).Attempts[0].PID
	retrierPID := c.waitRun(retrier.ID, "to be running", attemptRunning).Attempts[0].PID
	// Both slots are busy: this run stays queued across the crash.
	c.api("POST", "/api/v1/tasks/waiter/runs", nil, 201, &waiter)
	if got := c.run(waiter.ID); got.Status != "queued" {
		t.Fatalf("waiter before the crash: %s", got.Status)
	}

	p.stop(syscall.SIGKILL)
	if processGone(sleeperPID) || processGone(retrierPID) {
		t.Fatal("the attempts' processes died with the server; the test would not show recovery")
	}

	p = startBinary(t, data, "--max-concurrency", "2")
	c = p.client(t, data)
	lost := c.waitRun(sleeper.ID, "to be lost", func(r httpapi.Run) bool { return r.Status == "lost" && r.FinishedAtMs != 0 })
	if len(lost.Attempts) != 1 || lost.Attempts[0].Status != "lost" || lost.Attempts[0].ErrorClass != "worker_lost" {
		t.Errorf("sleeper attempts %+v", lost.Attempts)
	}
	retried := c.waitRun(retrier.ID, "to succeed on attempt 2", status("succeeded", "failed", "lost"))
	if retried.Status != "succeeded" || len(retried.Attempts) != 2 || retried.Attempts[0].Status != "lost" || retried.Attempts[1].Status != "succeeded" {
		t.Errorf("retrier after restart: %s %+v", retried.Status, retried.Attempts)
	}
	ran := c.waitRun(waiter.ID, "to run", status("succeeded", "failed"))
	if ran.Status != "succeeded" || len(ran.Attempts) != 1 {
		t.Errorf("waiter after restart: %s %+v", ran.Status, ran.Attempts)
	}
	eventually(t, "the orphaned processes to be gone", func() bool { return processGone(sleeperPID) && processGone(retrierPID) })
	for _, task := range []string{"sleeper", "retrier", "waiter"} {
		var tk httpapi.Task
		c.api("GET", "/api/v1/tasks/"+task, nil, 200, &tk)
		if n := len(c.runs(tk.ID)); n != 1 {
			t.Errorf("task %s has %d runs, want exactly 1", task, n)
		}
	}
	// The second attempt's output is there; the first one's log ended at the crash.
	status, body := c.raw("GET", "/api/v1/runs/"+retrier.ID+"/attempts/2/log", nil)
	if status != 200 || strings.TrimSpace(string(body)) != "attempt 2" {
		t.Errorf("retrier attempt 2 log: %d %q", status, body)
	}
	// A graceful stop leaves nothing running and exits 0.
	p.stop(syscall.SIGTERM)
	if code := p.cmd.ProcessState.ExitCode(); code != 0 {
		t.Errorf("exit code after SIGTERM: %d", code)
	}
}

// TestBinaryRefusesNoAuthOnPublicAddress: --no-auth on a non-loopback
// listener is refused at startup.
func TestBinaryRefusesNoAuthOnPublicAddress(t *testing.T) {
	cmd := exec.Command(edgeBinary(t), "serve", "--data-dir", t.TempDir(), "--listen", "0.0.0.0:0", "--no-auth")
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "refusing") {
		t.Fatalf("serve --no-auth on 0.0.0.0: %v\n%s", err, out)
	}
}

// TestBinaryHealthAndVersion: probes and `version` of the real binary.
func TestBinaryHealthAndVersion(t *testing.T) {
	out, err := exec.Command(edgeBinary(t), "version").Output()
	if err != nil || !strings.HasPrefix(string(out), "ql3-edge ") {
		t.Fatalf("version: %v %q", err, out)
	}
	p := startBinary(t, filepath.Join(t.TempDir(), "data"))
	for _, path := range []string{"/healthz", "/readyz"} {
		resp, err := http.Get(p.base + path)
		if err != nil {
			t.Fatal(err)
		}
		var h httpapi.Health
		err = json.NewDecoder(resp.Body).Decode(&h)
		resp.Body.Close()
		if err != nil || resp.StatusCode != 200 || h.Status != "ok" {
			t.Errorf("%s: %d %+v %v", path, resp.StatusCode, h, err)
		}
	}
}
