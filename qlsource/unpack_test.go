package qlsource

import (
	"archive/tar"
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
			tw.Write(bytes.Repeat([]byte("x"), int(h.Size)))
		}
	}
	tw.Close()
	return b.Bytes()
}

func TestUnpack(t *testing.T) {
	reg := func(name string) *tar.Header {
		return &tar.Header{Name: name, Typeflag: tar.TypeReg, Size: 1, Mode: 0o644}
	}
	for name, tc := range map[string]struct {
		members []*tar.Header
		err     string
		skipped []string
	}{
		"top folder": {members: []*tar.Header{reg("data/db/database.sqlite"), reg("data/scripts/a.js"),
			{Name: "data/scripts/l.js", Typeflag: tar.TypeSymlink, Linkname: "/etc/passwd"},
			{Name: "data/scripts/h.js", Typeflag: tar.TypeLink, Linkname: "data/scripts/a.js"}},
			skipped: []string{"data/scripts/l.js", "data/scripts/h.js"}},
		"flat":      {members: []*tar.Header{reg("./db/database.sqlite")}},
		"escape":    {members: []*tar.Header{reg("db/database.sqlite"), reg("../x")}, err: "not a clean relative path"},
		"absolute":  {members: []*tar.Header{reg("/db/database.sqlite")}, err: "not a relative path"},
		"no db":     {members: []*tar.Header{reg("scripts/a.js")}, err: "holds no db/database.sqlite"},
		"duplicate": {members: []*tar.Header{reg("db/database.sqlite"), reg("db/database.sqlite")}, err: "file exists"},
	} {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "u")
			root, skipped, err := Unpack(bytes.NewReader(tarOf(t, tc.members...)), FormatTar, dir)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("%v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(filepath.Join(root, "db", "database.sqlite")); err != nil {
				t.Fatal(err)
			}
			if strings.Join(skipped, ",") != strings.Join(tc.skipped, ",") {
				t.Fatalf("skipped %v, want %v", skipped, tc.skipped)
			}
		})
	}
}

// FuzzUnpack: whatever the archive, nothing is written outside the
// target folder and nothing written is a link.
func FuzzUnpack(f *testing.F) {
	f.Add(tarOf(f, &tar.Header{Name: "db/database.sqlite", Typeflag: tar.TypeReg, Size: 1, Mode: 0o644}))
	f.Add(tarOf(f, &tar.Header{Name: "a/../../b", Typeflag: tar.TypeReg, Size: 1, Mode: 0o644}))
	f.Fuzz(func(t *testing.T, data []byte) {
		base := t.TempDir()
		dir := filepath.Join(base, "u")
		_, _, _ = Unpack(bytes.NewReader(data), FormatTar, dir)
		_ = filepath.Walk(base, func(p string, info os.FileInfo, err error) error {
			if err != nil {
				return nil
			}
			if p != base && !strings.HasPrefix(p, dir) {
				t.Fatalf("wrote outside the target: %s", p)
			}
			if info.Mode()&os.ModeSymlink != 0 {
				t.Fatalf("wrote a link: %s", p)
			}
			return nil
		})
	})
}
