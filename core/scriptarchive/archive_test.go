package scriptarchive

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"io"
	"strconv"
	"strings"
	"testing"

	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/scriptpath"
)

func tarOf(t testing.TB, hs ...*tar.Header) []byte {
	t.Helper()
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	for _, h := range hs {
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

func reg(name string, size int64) *tar.Header {
	return &tar.Header{Name: name, Typeflag: tar.TypeReg, Size: size, Mode: 0o644}
}

// TestReadArchiveRefuses: every attack named by issue 22 is refused with
// the field and the reason; a good archive lists its members and walks its
// contents.
func TestReadArchiveRefuses(t *testing.T) {
	many := make([]*tar.Header, scriptpath.MaxEntries+1)
	for i := range many {
		many[i] = &tar.Header{Name: "d" + strings.Repeat("x", i%7) + "/" + string(rune('a'+i%26)) + "/" + strconv.Itoa(i), Typeflag: tar.TypeDir, Mode: 0o755}
	}
	for name, tc := range map[string]struct {
		data []byte
		want string
	}{
		"dot-dot":       {tarOf(t, reg("ok.js", 1), reg("../escape.js", 1)), `".."`},
		"absolute":      {tarOf(t, reg("/etc/cron.d/x", 1)), "relative"},
		"inner dot-dot": {tarOf(t, reg("a/../../x", 1)), `".."`},
		"symlink":       {tarOf(t, &tar.Header{Name: "l", Typeflag: tar.TypeSymlink, Linkname: "/etc"}), "symbolic link"},
		"hard link":     {tarOf(t, &tar.Header{Name: "h", Typeflag: tar.TypeLink, Linkname: "ok.js"}), "hard link"},
		"device":        {tarOf(t, &tar.Header{Name: "dev", Typeflag: tar.TypeChar, Devmajor: 1, Devminor: 3}), "device"},
		"fifo":          {tarOf(t, &tar.Header{Name: "p", Typeflag: tar.TypeFifo}), "special"},
		"twice":         {tarOf(t, reg("a", 1), reg("./a", 1)), "twice"},
		"too many":      {tarOf(t, many...), "entries"},
		"not tar":       {[]byte("hello, this is not an archive at all, not even close......"), "tar"},
	} {
		_, err := ReadArchive(FormatTar, bytes.NewReader(tc.data), int64(len(tc.data)))
		if code := errs.Code(err); code != errs.Invalid || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v (%s), want invalid mentioning %s", name, err, code, tc.want)
		}
	}
	if err := CheckFormat("rar"); errs.Field(err) != "format" {
		t.Errorf("rar: %v", err)
	}
	good := tarOf(t, &tar.Header{Name: "lib/", Typeflag: tar.TypeDir, Mode: 0o755}, reg("lib/u.js", 3), reg("./main.js", 5))
	ms, err := ReadArchive(FormatTar, bytes.NewReader(good), int64(len(good)))
	if err != nil || len(ms) != 3 || ms[0].Path != "lib" || !ms[0].Dir || ms[2].Path != "main.js" || ms[2].Size != 5 {
		t.Fatalf("good archive: %+v %v", ms, err)
	}
	var got []string
	err = WalkArchiveFiles(FormatTar, bytes.NewReader(good), int64(len(good)), func(m ArchiveMember, r io.Reader) error {
		b, err := io.ReadAll(r)
		got = append(got, m.Path+"="+string(b))
		return err
	})
	if err != nil || strings.Join(got, ",") != "lib/u.js=xxx,main.js=xxxxx" {
		t.Fatalf("walk: %v %v", got, err)
	}
}

func TestZipMembers(t *testing.T) {
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	w, _ := zw.Create("a/b.py")
	w.Write([]byte("print(1)\n"))
	h := &zip.FileHeader{Name: "link"}
	h.SetMode(0o777 | 1<<27) // os.ModeSymlink
	if _, err := zw.CreateHeader(h); err != nil {
		t.Fatal(err)
	}
	zw.Close()
	if _, err := ReadArchive(FormatZip, bytes.NewReader(b.Bytes()), int64(b.Len())); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Fatalf("zip with a symlink: %v", err)
	}
}

func TestCheckLimits(t *testing.T) {
	if err := scriptpath.CheckLimits(scriptpath.MaxEntries, 0, 1, 0); errs.Code(err) != errs.Invalid || !strings.Contains(err.Error(), "8192") {
		t.Errorf("entries: %v", err)
	}
	if err := scriptpath.CheckLimits(0, scriptpath.MaxTotalBytes, 0, 1); errs.Code(err) != errs.TooLarge {
		t.Errorf("bytes: %v", err)
	}
	if err := scriptpath.CheckLimits(scriptpath.MaxEntries+5, scriptpath.MaxTotalBytes+5, 0, -1); err != nil {
		t.Errorf("shrinking: %v", err)
	}
}

// FuzzReadArchive: reading any tar or zip bytes never panics, and every
// member it accepts has a clean path and is a file or folder within the
// limits; walking an accepted archive never panics either.
func FuzzReadArchive(f *testing.F) {
	f.Add([]byte("hello"), false)
	f.Add(tarOf(f, reg("a/b.js", 3)), false)
	f.Add(tarOf(f, reg("../x", 1)), false)
	f.Add(tarOf(f, &tar.Header{Name: "l", Typeflag: tar.TypeSymlink, Linkname: "/"}), false)
	f.Add([]byte("PK\x05\x06\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"), true)
	f.Fuzz(func(t *testing.T, data []byte, zipped bool) {
		format := FormatTar
		if zipped {
			format = FormatZip
		}
		ms, err := ReadArchive(format, bytes.NewReader(data), int64(len(data)))
		if err != nil {
			return
		}
		if len(ms) > scriptpath.MaxEntries {
			t.Fatalf("%d members", len(ms))
		}
		for _, m := range ms {
			if c, err := scriptpath.Clean("p", m.Path, false); err != nil || c != m.Path {
				t.Fatalf("accepted member %q: %v", m.Path, err)
			}
			if !m.Dir && (m.Size < 0 || m.Size > scriptpath.MaxFileBytes) {
				t.Fatalf("member %q of %d bytes", m.Path, m.Size)
			}
		}
		_ = WalkArchiveFiles(format, bytes.NewReader(data), int64(len(data)), func(ArchiveMember, io.Reader) error { return nil })
	})
}
