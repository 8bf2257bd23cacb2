package browsertest

import (
	"archive/tar"
	"compress/gzip"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// qlFixture is the committed QingLong 2.21.0 data directory.
const qlFixture = "../../scripts/qlfixture/testdata/qinglong-2.21.0"

// copyQL copies the QingLong fixture with fixed modes and returns the copy
// and a tar.gz of it.
func copyQL(t *testing.T, dir string) (string, string) {
	t.Helper()
	dst := filepath.Join(dir, "ql")
	arch := filepath.Join(dir, "ql.tar.gz")
	f, err := os.Create(arch)
	if err != nil {
		t.Fatal(err)
	}
	zw := gzip.NewWriter(f)
	tw := tar.NewWriter(zw)
	err = filepath.WalkDir(qlFixture, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(qlFixture, p)
		if d.IsDir() {
			if rel != "." {
				tw.WriteHeader(&tar.Header{Name: filepath.ToSlash(rel) + "/", Typeflag: tar.TypeDir, Mode: 0o755})
			}
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		tw.WriteHeader(&tar.Header{Name: filepath.ToSlash(rel), Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(b))})
		tw.Write(b)
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err == nil {
		err = tw.Close()
	}
	if err == nil {
		err = zw.Close()
	}
	if err == nil {
		err = f.Close()
	}
	if err != nil {
		t.Fatal(err)
	}
	return dst, arch
}

// TestEdgeImportWizard drives the Import page of a real ql3-edge: an
// uploaded archive of a QingLong data folder and the same folder by path
// give the same plan digest; the plan lists the rows that need attention
// with their reasons (no env value anywhere on the page); apply creates
// the tasks; applying again says nothing changed.
func TestEdgeImportWizard(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	from, archive := copyQL(t, dir)
	logPath := filepath.Join(dir, "edge.log")
	p := start(t, "ql3-edge", []string{"serve", "--data-dir", data, "--listen", "127.0.0.1:0", "--log-format", "json"}, nil, logPath)
	base := "http://" + loggedAddr(t, p, logPath, "ql3-edge started", "listen")
	waitReady(t, p, base+"/readyz", logPath)
	tok, err := os.ReadFile(filepath.Join(data, "admin.token"))
	if err != nil {
		t.Fatal(err)
	}
	tg := target{name: "ql3-edge", base: base, token: strings.TrimSpace(string(tok))}
	ctx := tab(t)
	do(t, ctx, "open", chromedp.Navigate(base+"/#/import"))
	signIn(t, ctx, tg)

	do(t, ctx, "inspect an upload",
		chromedp.WaitVisible(css("#nav-import")),
		hash("#/import"),
		chromedp.WaitVisible(css("#import-inspect")),
		chromedp.Click(css("#import-mode-upload")),
		chromedp.SetUploadFiles(css("#import-file"), []string{archive}),
		chromedp.Click(css("#import-inspect")),
		chromedp.WaitVisible(css("#import-digest")),
	)
	uploaded := get(t, ctx, "digest", chromedp.Evaluate[string](textOf("#import-digest")))

	do(t, ctx, "inspect a path",
		chromedp.Click(css("#import-mode-path")),
		chromedp.SendKeys(css("#import-from"), from),
		chromedp.Click(css("#import-inspect")),
		chromedp.WaitVisible(css("#import-rows tbody tr")),
	)
	byPath := get(t, ctx, "digest", chromedp.Evaluate[string](textOf("#import-digest")))
	if !strings.Contains(byPath, "sha256:") || byPath != uploaded {
		t.Fatalf("digests: by path %q, uploaded %q", byPath, uploaded)
	}
	rows := get(t, ctx, "rows", chromedp.Evaluate[string](`Array.from(document.querySelectorAll('#import-rows tbody tr')).map(r => r.dataset.kind + ':' + r.dataset.source + ':' + r.dataset.class).join(' ')`))
	for _, want := range []string{"task:7:requires_manual_action", "task:10:malformed", "task:5:requires_shell_compatibility", "env:8:requires_manual_action", "subscription:4:requires_manual_action"} {
		if !strings.Contains(rows, want) {
			t.Errorf("plan rows %q lack %s", rows, want)
		}
	}
	if page := get(t, ctx, "page", chromedp.Evaluate[string](`document.body.innerText`)); strings.Contains(page, "AAA111") || !strings.Contains(page, "@once") {
		t.Errorf("page text: value shown or reason missing")
	}
	shot(t, ctx, "ql3-edge-import-plan")

	do(t, ctx, "apply",
		chromedp.Click(css("#import-apply")),
		poll(`document.querySelector('#import-status') && document.querySelector('#import-status').dataset.status === 'applied'`),
	)
	shot(t, ctx, "ql3-edge-import-applied")
	code, body := apiRaw(t, tg, "GET", "/api/v1/tasks?limit=1", nil)
	var page struct {
		Total int `json:"total"`
	}
	// 11 imported tasks and the pull task of the imported subscription.
	if code != 200 || json.Unmarshal([]byte(body), &page) != nil || page.Total != 12 {
		t.Fatalf("tasks after apply: %d %s", code, body)
	}
	do(t, ctx, "apply again",
		chromedp.Click(css("#import-apply")),
		poll(`document.querySelector('#import-status').dataset.status === 'existing'`),
	)
	if t.Failed() {
		out, _ := os.ReadFile(logPath)
		t.Logf("ql3-edge log:\n%s", out)
	}
}
