package browsertest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// Bounds: the whole package runs one browser; every wait is bounded. The
// bounds only end a hung test, they are never a pass condition: a step may
// span a worker's pull, a heartbeat (10 s by default) and a kill grace, on
// a loaded 2-core CI machine running other packages' tests at once.
const (
	stepTimeout   = 60 * time.Second
	startTimeout  = 60 * time.Second
	chromiumPath  = "/usr/bin/chromium"
	chromiumEnv   = "QL3_CHROMIUM"
	buildTimeout  = 5 * time.Minute
	screenshotEnv = "QL3_SCREENSHOT_DIR"
)

var (
	binDir      string // the built binaries
	browserCtx  context.Context
	shotDir     string
	chromiumBin string
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	var err error
	binDir, err = os.MkdirTemp("", "ql3-browsertest-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(binDir)
	shotDir = os.Getenv(screenshotEnv)
	if shotDir == "" {
		shotDir, err = os.MkdirTemp("", "ql3-panel-screenshots-")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	// A missing browser is a failure, never a skip: the panel would go
	// untested (.ci/run installs Debian's chromium).
	chromiumBin = os.Getenv(chromiumEnv)
	if chromiumBin == "" {
		chromiumBin = chromiumPath
	}
	if _, err := os.Stat(chromiumBin); err != nil {
		fmt.Fprintf(os.Stderr, "browsertest: no Chromium at %s (apt-get install -y chromium, or set %s): %v\n", chromiumBin, chromiumEnv, err)
		return 1
	}
	for _, b := range []struct{ name, pkg string }{
		{"ql3-edge", "github.com/ql3/ql3/edge/cmd/ql3-edge"},
		{"ql3-control", "github.com/ql3/ql3/controlplane/cmd/ql3-control"},
		{"ql3-worker", "github.com/ql3/ql3/worker/cmd/ql3-worker"},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), buildTimeout)
		cmd := exec.CommandContext(ctx, "go", "build", "-o", filepath.Join(binDir, b.name), b.pkg)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		out, err := cmd.CombinedOutput()
		cancel()
		if err != nil {
			fmt.Fprintf(os.Stderr, "browsertest: build %s: %v\n%s", b.name, err, out)
			return 1
		}
	}
	userData, err := os.MkdirTemp("", "ql3-chromium-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(userData)
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromiumBin),
		chromedp.Headless,
		chromedp.NoSandbox, // CI runs as root
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.UserDataDir(userData),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.WindowSize(1200, 900),
	}
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelAlloc()
	bctx, cancelBrowser := chromedp.NewContext(allocCtx)
	defer cancelBrowser()
	// The first call starts the browser; it takes no timeout (a timeout
	// there would bound the browser's life), the allocator bounds the start.
	if err := chromedp.Do(bctx); err != nil {
		fmt.Fprintf(os.Stderr, "browsertest: start %s: %v\n", chromiumBin, err)
		return 1
	}
	browserCtx = bctx
	code := m.Run()
	fmt.Printf("browsertest: screenshots in %s\n", shotDir)
	return code
}

// tab opens a fresh tab (own cookies are shared by the browser profile:
// each test signs in on its own server's origin).
func tab(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := chromedp.NewContext(browserCtx)
	t.Cleanup(cancel)
	// The first call opens the tab and ties it to the context it runs
	// on: no timeout here, or the tab would close with the first step.
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("open a tab: %v", err)
	}
	return ctx
}

// do runs actions with the step bound and fails the test on error.
func do(t *testing.T, ctx context.Context, what string, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	get(t, ctx, what, chromedp.Steps(actions...))
}

// get runs one action that returns a value, bounded like do.
func get[T any](t *testing.T, ctx context.Context, what string, action chromedp.Action[T]) T {
	t.Helper()
	sctx, cancel := context.WithTimeout(ctx, stepTimeout)
	defer cancel()
	v, err := chromedp.Run(sctx, action)
	if err != nil {
		lctx, lcancel := context.WithTimeout(ctx, 5*time.Second)
		loc, _ := chromedp.Run(lctx, chromedp.Location())
		lcancel()
		shot(t, ctx, "failure-"+sanitize(t.Name()))
		t.Fatalf("%s (at %s): %v", what, loc, err)
	}
	return v
}

// shot saves a full-page screenshot and prints its path.
func shot(t *testing.T, ctx context.Context, name string) string {
	t.Helper()
	sctx, cancel := context.WithTimeout(ctx, stepTimeout)
	defer cancel()
	png, err := chromedp.Run(sctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Logf("screenshot %s: %v", name, err)
		return ""
	}
	p := filepath.Join(shotDir, name+".png")
	if err := os.WriteFile(p, png, 0o644); err != nil {
		t.Logf("screenshot %s: %v", name, err)
		return ""
	}
	t.Logf("screenshot: %s", p)
	fmt.Printf("screenshot: %s\n", p)
	return p
}

func sanitize(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' {
			return r
		}
		return '-'
	}, s)
}

// loggedAddr waits until the process's JSON log (logPath) carries a record
// with message msg and a non-empty string field key, and returns that
// address. The binaries listen on 127.0.0.1:0 and log the port the kernel
// gave them: a port picked by the test, closed and bound later by the
// binary could be taken in between by any other process on the machine.
func loggedAddr(t *testing.T, p *process, logPath, msg, key string) string {
	t.Helper()
	deadline := time.Now().Add(startTimeout)
	delay := 10 * time.Millisecond
	for {
		if data, err := os.ReadFile(logPath); err == nil {
			for _, line := range strings.Split(string(data), "\n") {
				var rec map[string]any
				if json.Unmarshal([]byte(line), &rec) != nil || rec["msg"] != msg {
					continue
				}
				if addr, _ := rec[key].(string); addr != "" {
					return addr
				}
			}
		}
		select {
		case err := <-p.done:
			p.done <- err // the cleanup waits for it too
			out, _ := os.ReadFile(logPath)
			t.Fatalf("server exited before logging %q: %v\n%s", msg, err, out)
		case <-time.After(delay):
		}
		if time.Now().After(deadline) {
			out, _ := os.ReadFile(logPath)
			t.Fatalf("no %q record with %s within %v\n%s", msg, key, startTimeout, out)
		}
		delay = min(2*delay, 200*time.Millisecond)
	}
}

// process is a started binary, stopped with SIGTERM at cleanup.
type process struct {
	cmd  *exec.Cmd
	done chan error
}

func start(t *testing.T, name string, args []string, env []string, logPath string) *process {
	t.Helper()
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(binDir, name), args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &process{cmd: cmd, done: make(chan error, 1)}
	go func() { p.done <- cmd.Wait(); logf.Close() }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(15 * time.Second):
			_ = cmd.Process.Kill()
			<-p.done
			t.Errorf("%s did not stop within 15 s of SIGTERM", name)
		}
	})
	return p
}

// waitReady polls url until it answers 200, the process exits, or the
// start bound passes (with backoff).
func waitReady(t *testing.T, p *process, url, logPath string) {
	t.Helper()
	deadline := time.Now().Add(startTimeout)
	delay := 20 * time.Millisecond
	client := &http.Client{Timeout: 2 * time.Second}
	for {
		resp, err := client.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return
			}
		}
		select {
		case err := <-p.done:
			p.done <- err // the cleanup waits for it too
			out, _ := os.ReadFile(logPath)
			t.Fatalf("server exited before ready: %v\n%s", err, out)
		case <-time.After(delay):
		}
		if time.Now().After(deadline) {
			out, _ := os.ReadFile(logPath)
			t.Fatalf("%s not ready within %v\n%s", url, startTimeout, out)
		}
		delay = min(2*delay, 500*time.Millisecond)
	}
}
