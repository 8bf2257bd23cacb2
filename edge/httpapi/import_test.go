package httpapi

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ql3/ql3/edge/importer"
	"github.com/ql3/ql3/edge/scripts"
	"github.com/ql3/ql3/edge/sqlite"
)

// qlFixture is the committed QingLong 2.21.0 data directory.
const qlFixture = "../../scripts/qlfixture/testdata/qinglong-2.21.0"

func importFor(dir string, store *sqlite.Store, folder *scripts.Folder) *importer.Service {
	return &importer.Service{
		Importer:  &importer.Importer{Store: store, Folder: folder, StagingDir: filepath.Join(dir, "import")},
		UploadDir: filepath.Join(dir, "import", "uploads"),
	}
}

// qlCopy copies the QingLong fixture with fixed modes (0644 files, 0755
// folders: a checkout's umask may differ).
func qlCopy(t testing.TB) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "ql")
	err := filepath.WalkDir(qlFixture, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(qlFixture, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

// qlTar is a tar of the data directory dir under a top folder "data/".
func qlTar(t testing.TB, dir string) []byte {
	t.Helper()
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		name := "data/" + filepath.ToSlash(rel)
		if rel == "." {
			name = "data"
		}
		if d.IsDir() {
			return tw.WriteHeader(&tar.Header{Name: name + "/", Typeflag: tar.TypeDir, Mode: 0o755})
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if err := tw.WriteHeader(&tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(data))}); err != nil {
			return err
		}
		_, err = tw.Write(data)
		return err
	})
	if err == nil {
		err = tw.WriteHeader(&tar.Header{Name: "data/scripts/link.js", Typeflag: tar.TypeSymlink, Linkname: "/etc/passwd"})
	}
	if err == nil {
		err = tw.Close()
	}
	if err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// importExamples drives every import route for the OpenAPI examples.
func (f *fixture) importExamples() {
	from := qlCopy(f.t)
	var in importer.Inspection
	f.decode("POST", "/api/v1/import/inspect", `{"from":`+jsonString(from)+`,"zone":"Asia/Shanghai"}`, http.StatusOK, &in)
	f.call("POST", "/api/v1/import/inspect", `{"from":`+jsonString(from)+`}`)
	f.call("POST", "/api/v1/import/inspect", `{"from":"relative/path","zone":"UTC"}`)
	f.call("POST", "/api/v1/import/apply", `{"plan":"sha256:00"}`)
	f.call("POST", "/api/v1/import/apply", `{"plan":"`+in.Digest+`"}`)
	f.call("POST", "/api/v1/import/apply", `{"plan":"`+in.Digest+`"}`)
	f.raw("POST", "/api/v1/import/upload?zone=Asia/Shanghai&format=tar", qlTar(f.t, from))
	f.raw("POST", "/api/v1/import/upload?zone=Asia/Shanghai&format=zip", []byte("x"))
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// TestImportOverHTTP: inspect a path, apply (201), replay (200
// existing); an upload of the same data directory has the same digest
// (the digest binds content, not where it lies) and its link member is
// reported as skipped; a changed source is refused with 409.
func TestImportOverHTTP(t *testing.T) {
	f := newFixture(t)
	from := qlCopy(t)
	var in importer.Inspection
	f.decode("POST", "/api/v1/import/inspect", `{"from":`+jsonString(from)+`,"zone":"Asia/Shanghai"}`, http.StatusOK, &in)
	if in.Plan.Counts["tasks"]["lossless"] != 8 || !strings.HasPrefix(in.Digest, "sha256:") {
		t.Fatalf("plan counts %v digest %s", in.Plan.Counts, in.Digest)
	}
	if bytes.Contains(f.call("POST", "/api/v1/import/inspect", `{"from":`+jsonString(from)+`,"zone":"Asia/Shanghai"}`).body, []byte("AAA111")) {
		t.Fatal("an env value is in the plan")
	}
	var res importer.Result
	f.decode("POST", "/api/v1/import/apply", `{"plan":"`+in.Digest+`","from":`+jsonString(from)+`,"zone":"Asia/Shanghai"}`, http.StatusCreated, &res)
	if res.Status != "applied" || res.Tasks != 11 || res.Files != 7 {
		t.Fatalf("apply %+v", res)
	}
	f.decode("POST", "/api/v1/import/apply", `{"plan":"`+in.Digest+`"}`, http.StatusOK, &res)
	if res.Status != "existing" {
		t.Fatalf("replay %+v", res)
	}

	r := f.raw("POST", "/api/v1/import/upload?zone=Asia/Shanghai", qlTar(t, from))
	var up importer.Inspection
	if r.status != http.StatusOK || json.Unmarshal(r.body, &up) != nil {
		t.Fatalf("upload: %d %s", r.status, r.body)
	}
	if up.Digest != in.Digest || !strings.HasPrefix(up.From, importer.UploadPrefix) || len(up.Skipped) != 1 || up.Skipped[0] != "data/scripts/link.js" {
		t.Fatalf("upload: from %s digest %s skipped %v", up.From, up.Digest, up.Skipped)
	}

	// A second installation, changed after its inspect.
	g := newFixture(t)
	other := qlCopy(t)
	g.decode("POST", "/api/v1/import/inspect", `{"from":`+jsonString(other)+`,"zone":"Asia/Shanghai"}`, http.StatusOK, &in)
	if err := os.WriteFile(filepath.Join(other, "scripts", "tool.ts"), []byte("changed\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r = g.call("POST", "/api/v1/import/apply", `{"plan":"`+in.Digest+`"}`)
	if r.status != http.StatusConflict || !strings.Contains(string(r.body), "source changed") {
		t.Fatalf("changed source: %d %s", r.status, r.body)
	}
}
