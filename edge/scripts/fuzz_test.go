package scripts

import (
	"archive/tar"
	"os"
	"path/filepath"
	"testing"

	"github.com/ql3/ql3/core/scriptpath"
)

// FuzzArchiveMembers: reading any tar or zip bytes never panics, and every
// member it accepts has a clean path and is a file or folder within the
// limits.
func FuzzArchiveMembers(f *testing.F) {
	f.Add([]byte("hello"), false)
	f.Add(tarOf(f, &tar.Header{Name: "a/b.js", Typeflag: tar.TypeReg, Size: 3, Mode: 0o644}), false)
	f.Add(tarOf(f, &tar.Header{Name: "../x", Typeflag: tar.TypeReg, Size: 1, Mode: 0o644}), false)
	f.Add(tarOf(f, &tar.Header{Name: "l", Typeflag: tar.TypeSymlink, Linkname: "/"}), false)
	f.Add([]byte("PK\x05\x06\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"), true)
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte, zipped bool) {
		p := filepath.Join(dir, "a")
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		src, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		defer src.Close()
		format := FormatTar
		if zipped {
			format = FormatZip
		}
		members, closeFn, err := readMembers(format, src)
		closeFn()
		if err != nil {
			return
		}
		if len(members) > scriptpath.MaxEntries {
			t.Fatalf("%d members", len(members))
		}
		for _, m := range members {
			if c, err := scriptpath.Clean("p", m.path, false); err != nil || c != m.path {
				t.Fatalf("accepted member %q: %v", m.path, err)
			}
			if !m.dir && (m.size < 0 || m.size > scriptpath.MaxFileBytes) {
				t.Fatalf("member %q of %d bytes", m.path, m.size)
			}
		}
	})
}
