package scripts

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ql3/ql3/core/errs"
)

func newFolder(t *testing.T) (*Folder, string) {
	t.Helper()
	base := t.TempDir()
	f, err := Open(filepath.Join(base, "scripts"))
	if err != nil {
		t.Fatal(err)
	}
	return f, base
}

// snapshot lists everything under dir (names and sizes), links as links.
func snapshot(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		b.WriteString(rel + " " + info.Mode().String() + "\n")
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func TestWriteReadListConflicts(t *testing.T) {
	f, _ := newFolder(t)
	etag, created, err := f.Write("dir/a.js", []byte("console.log(1)\n"), Precondition{IfNoneMatch: true})
	if err != nil || !created || len(etag) != 64 {
		t.Fatalf("create: %q %v %v", etag, created, err)
	}
	data, got, err := f.Read("dir/a.js")
	if err != nil || got != etag || string(data) != "console.log(1)\n" {
		t.Fatalf("read: %q %q %v", data, got, err)
	}
	// A second create is stale: 412, not an overwrite.
	if _, _, err := f.Write("dir/a.js", []byte("x"), Precondition{IfNoneMatch: true}); !errors.Is(err, ErrStale) {
		t.Fatalf("second create: %v", err)
	}
	// Two editors read the same version; the first save wins, the second is stale.
	etag2, _, err := f.Write("dir/a.js", []byte("console.log(2)\n"), Precondition{IfMatch: etag})
	if err != nil {
		t.Fatal(err)
	}
	var stale *StaleError
	if _, _, err := f.Write("dir/a.js", []byte("console.log(3)\n"), Precondition{IfMatch: etag}); !errors.As(err, &stale) || stale.Current != etag2 {
		t.Fatalf("stale editor: %v", err)
	}
	if data, _, _ := f.Read("dir/a.js"); string(data) != "console.log(2)\n" {
		t.Fatalf("stale write changed the file: %q", data)
	}
	if _, _, err := f.Write("dir/b.js", []byte("x"), Precondition{}); errs.Field(err) != "If-Match" {
		t.Fatalf("no precondition: %v", err)
	}
	if _, _, err := f.Write("dir/missing.js", []byte("x"), Precondition{IfMatch: etag}); !errors.Is(err, ErrStale) {
		t.Fatalf("replace of a missing file: %v", err)
	}
	list, err := f.List("")
	if err != nil || len(list) != 1 || list[0].Name != "dir" || list[0].Kind != KindDir {
		t.Fatalf("list root: %+v %v", list, err)
	}
	list, err = f.List("dir")
	if err != nil || len(list) != 1 || list[0].Name != "a.js" || list[0].SHA256 != etag2 || list[0].Size != 15 {
		t.Fatalf("list dir: %+v %v", list, err)
	}
	if err := f.Move("dir/a.js", "other/b.js"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := f.Write("c.js", []byte("1"), Precondition{IfNoneMatch: true}); err != nil {
		t.Fatal(err)
	}
	if err := f.Move("c.js", "other/b.js"); errs.Code(err) != errs.Conflict {
		t.Fatalf("move over an existing file: %v", err)
	}
	if err := f.Move("other", "other/x"); errs.Code(err) != errs.Invalid {
		t.Fatalf("move into itself: %v", err)
	}
	if err := f.Delete("other", false); errs.Code(err) != errs.Conflict {
		t.Fatalf("delete non-empty without recursive: %v", err)
	}
	if err := f.Delete("other", true); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Stat("other/b.js"); errs.Code(err) != errs.NotFound {
		t.Fatalf("after delete: %v", err)
	}
}

// Path attacks: refused as invalid, and nothing is written anywhere.
func TestPathAttacks(t *testing.T) {
	f, base := newFolder(t)
	outside := filepath.Join(base, "outside")
	if err := os.Mkdir(outside, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(outside, "secret"), []byte("s"), 0o600); err != nil {
		t.Fatal(err)
	}
	// A symlink planted inside the folder (by a script, say) pointing out.
	if err := os.Symlink(outside, filepath.Join(f.Root(), "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "secret"), filepath.Join(f.Root(), "file-link")); err != nil {
		t.Fatal(err)
	}
	// A hard link to a file outside the folder.
	if err := os.Link(filepath.Join(outside, "secret"), filepath.Join(f.Root(), "hard")); err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, base)
	for _, p := range []string{"../x", "/etc/passwd", "a/../../x", "a\x00b", "link/secret", "link/new.js", "file-link", "hard", "link"} {
		_, _, werr := f.Write(p, []byte("pwned"), Precondition{IfNoneMatch: true})
		_, _, werr2 := f.Write(p, []byte("pwned"), Precondition{IfMatch: "*"})
		_, _, rerr := f.Read(p)
		for _, err := range []error{werr, werr2, rerr, f.Move(p, "moved"), f.Mkdir(p + "/d")} {
			if errs.Code(err) != errs.Invalid {
				t.Errorf("%q: %v, want invalid", p, err)
			}
		}
		if _, err := f.List(p); errs.Code(err) != errs.Invalid && p != "file-link" && p != "hard" {
			t.Errorf("list %q: %v", p, err)
		}
	}
	if _, _, err := f.Write("ok.js", []byte("1"), Precondition{IfNoneMatch: true}); err != nil {
		t.Fatal(err)
	}
	if err := f.Move("ok.js", "link/ok.js"); errs.Code(err) != errs.Invalid {
		t.Fatalf("move into a linked folder: %v", err)
	}
	if err := f.Delete("ok.js", false); err != nil {
		t.Fatal(err)
	}
	if after := snapshot(t, base); after != before {
		t.Fatalf("something was written:\nbefore\n%s\nafter\n%s", before, after)
	}
	// Deleting the link removes the link, never what it points to.
	if err := f.Delete("link", true); errs.Code(err) != errs.Invalid {
		t.Fatalf("delete through a link: %v", err)
	}
	if _, err := os.Stat(filepath.Join(outside, "secret")); err != nil {
		t.Fatal("the target of a link was touched")
	}
}

func tarOf(t testing.TB, entries ...*tar.Header) []byte {
	t.Helper()
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	for _, h := range entries {
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			if _, err := tw.Write(bytes.Repeat([]byte("x"), int(h.Size))); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func spool(t *testing.T, data []byte) *os.File {
	t.Helper()
	file, err := os.CreateTemp(t.TempDir(), "upload")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := file.Write(data); err != nil {
		t.Fatal(err)
	}
	if _, err := file.Seek(0, 0); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { file.Close() })
	return file
}

func TestUpload(t *testing.T) {
	f, base := newFolder(t)
	reg := func(name string, size int64) *tar.Header {
		return &tar.Header{Name: name, Typeflag: tar.TypeReg, Size: size, Mode: 0o644}
	}
	good := tarOf(t, &tar.Header{Name: "pkg/", Typeflag: tar.TypeDir, Mode: 0o755}, reg("./pkg/main.js", 3), reg("pkg/lib/util.js", 5))
	res, err := f.Upload("", FormatTar, spool(t, good), false)
	if err != nil || res.Files != 2 || res.Bytes != 8 {
		t.Fatalf("upload: %+v %v", res, err)
	}
	if data, _, err := f.Read("pkg/lib/util.js"); err != nil || string(data) != "xxxxx" {
		t.Fatalf("read back: %q %v", data, err)
	}
	if _, err := f.Upload("", FormatTar, spool(t, good), false); errs.Code(err) != errs.Conflict {
		t.Fatalf("upload over existing files: %v", err)
	}
	if _, err := f.Upload("", FormatTar, spool(t, good), true); err != nil {
		t.Fatalf("upload with overwrite: %v", err)
	}
	before := snapshot(t, base)
	many := make([]*tar.Header, 0, 100_000)
	for i := 0; i < 100_000; i++ {
		many = append(many, &tar.Header{Name: "d/", Typeflag: tar.TypeDir, Mode: 0o755})
	}
	var zb bytes.Buffer
	zw := zip.NewWriter(&zb)
	zh := &zip.FileHeader{Name: "evil-link"}
	zh.SetMode(os.ModeSymlink | 0o777)
	w, _ := zw.CreateHeader(zh)
	w.Write([]byte("/etc/passwd"))
	zw.Close()
	var zb2 bytes.Buffer
	zw2 := zip.NewWriter(&zb2)
	w2, _ := zw2.Create("../escape.js")
	w2.Write([]byte("x"))
	zw2.Close()
	for name, tc := range map[string]struct {
		format string
		data   []byte
		want   string
	}{
		"dot-dot":       {FormatTar, tarOf(t, reg("ok.js", 1), reg("../escape.js", 1)), `".."`},
		"absolute":      {FormatTar, tarOf(t, reg("/etc/cron.d/x", 1)), "relative"},
		"inner dot-dot": {FormatTar, tarOf(t, reg("a/../../x", 1)), `".."`},
		"symlink":       {FormatTar, tarOf(t, reg("ok.js", 1), &tar.Header{Name: "l", Typeflag: tar.TypeSymlink, Linkname: "/etc"}), "symbolic link"},
		"hard link":     {FormatTar, tarOf(t, &tar.Header{Name: "h", Typeflag: tar.TypeLink, Linkname: "ok.js"}), "hard link"},
		"device":        {FormatTar, tarOf(t, &tar.Header{Name: "dev", Typeflag: tar.TypeChar, Devmajor: 1, Devminor: 3}), "device"},
		"fifo":          {FormatTar, tarOf(t, &tar.Header{Name: "p", Typeflag: tar.TypeFifo}), "special"},
		"100k entries":  {FormatTar, tarOf(t, many...), "limit is 8192"},
		"zip symlink":   {FormatZip, zb.Bytes(), "symbolic link"},
		"zip dot-dot":   {FormatZip, zb2.Bytes(), `".."`},
		"not a tar":     {FormatTar, []byte("hello"), "tar"},
		"format":        {"rar", good, "tar, tar.gz or zip"},
	} {
		_, err := f.Upload("", tc.format, spool(t, tc.data), true)
		if errs.Code(err) != errs.Invalid || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want invalid mentioning %q", name, err, tc.want)
		}
	}
	if after := snapshot(t, base); after != before {
		t.Fatalf("a refused upload wrote something:\nbefore\n%s\nafter\n%s", before, after)
	}
}

func TestLimits(t *testing.T) {
	f, _ := newFolder(t)
	if _, _, err := f.Write("big.bin", make([]byte, 64<<20+1), Precondition{IfNoneMatch: true}); errs.Code(err) != errs.TooLarge || !strings.Contains(err.Error(), "64 MiB") {
		t.Fatalf("64 MiB + 1: %v", err)
	}
	// The entry limit counts what is on disk.
	for i := 0; i < 8191; i++ {
		if err := os.WriteFile(filepath.Join(f.Root(), "f"+strings.Repeat("0", 5-len(itoa(i)))+itoa(i)), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := f.Write("last.js", nil, Precondition{IfNoneMatch: true}); err != nil {
		t.Fatalf("entry 8192: %v", err)
	}
	if _, _, err := f.Write("over.js", nil, Precondition{IfNoneMatch: true}); errs.Code(err) != errs.Invalid || !strings.Contains(err.Error(), "limit is 8192") {
		t.Fatalf("entry 8193: %v", err)
	}
}

func itoa(i int) string {
	if i == 0 {
		return "0"
	}
	var b []byte
	for ; i > 0; i /= 10 {
		b = append([]byte{byte('0' + i%10)}, b...)
	}
	return string(b)
}

func TestTreeDigestOfFolder(t *testing.T) {
	f, _ := newFolder(t)
	for p, c := range map[string]string{"a/main.js": "require('./util')", "a/util.js": "1", "b/x.py": "2"} {
		if _, _, err := f.Write(p, []byte(c), Precondition{IfNoneMatch: true}); err != nil {
			t.Fatal(err)
		}
	}
	files, d1, err := f.Tree("a")
	if err != nil || len(files) != 2 || files[0].Path != "main.js" && files[1].Path != "main.js" {
		t.Fatalf("tree: %+v %v", files, err)
	}
	if _, _, err := f.Write("b/x.py", []byte("3"), Precondition{IfMatch: "*"}); err != nil {
		t.Fatal(err)
	}
	if _, d2, _ := f.Tree("a"); d2 != d1 {
		t.Fatal("a change outside the folder changed its digest")
	}
	if _, _, err := f.Write("a/util.js", []byte("2"), Precondition{IfMatch: "*"}); err != nil {
		t.Fatal(err)
	}
	if _, d3, _ := f.Tree("a"); d3 == d1 {
		t.Fatal("an edit did not change the digest")
	}
}
