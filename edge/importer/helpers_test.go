package importer

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/ql3/ql3/edge/envcrypt"
	"github.com/ql3/ql3/edge/scripts"
	"github.com/ql3/ql3/edge/sqlite"
	"github.com/ql3/ql3/worker/clock"
)

// fixture is the committed QingLong 2.21.0 data directory
// (scripts/qlfixture).
const fixture = "../../scripts/qlfixture/testdata/qinglong-2.21.0"

const zone = "Asia/Shanghai"

var t0 = time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)

// copyTree copies the fixture into a fresh folder with fixed modes (git
// checkouts differ in umask) and fixed mtimes.
func copyTree(t testing.TB, src string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "ql")
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		out := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(out, 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(out, b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	stamp := time.Date(2025, 6, 1, 8, 0, 0, 0, time.UTC)
	_ = filepath.WalkDir(dst, func(p string, d fs.DirEntry, err error) error {
		if err == nil {
			_ = os.Chtimes(p, stamp, stamp)
		}
		return nil
	})
	return dst
}

// treeState is every entry's path, type, mode, size, mtime and content
// digest (links by their target): what "unchanged" means for the source.
func treeState(t testing.TB, root string) string {
	t.Helper()
	var lines []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		st, err := os.Lstat(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		line := fmt.Sprintf("%s %v %d %d", rel, st.Mode(), st.Size(), st.ModTime().UnixNano())
		switch {
		case st.Mode()&fs.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			line += " -> " + target
		case st.Mode().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			sum := sha256.Sum256(b)
			line += " " + hex.EncodeToString(sum[:])
		}
		lines = append(lines, line)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// edgeDir is an edge data directory: its store (env store unlocked),
// scripts folder and staging folder.
type edgeDir struct {
	dir   string
	store *sqlite.Store
	im    *Importer
}

func openEdge(t testing.TB, dir string) *edgeDir {
	t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(dir, "edge.db"), sqlite.Options{Clock: clock.NewFake(t0)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	keyPath := filepath.Join(dir, envcrypt.DefaultKeyFileName)
	kek, err := envcrypt.LoadKeyFile(keyPath)
	if err != nil {
		if kek, err = envcrypt.CreateKeyFile(keyPath); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.UnlockEnv(ctx, kek); err != nil {
		t.Fatal(err)
	}
	folder, err := scripts.Open(filepath.Join(dir, "scripts"))
	if err != nil {
		t.Fatal(err)
	}
	return &edgeDir{dir: dir, store: st, im: &Importer{Store: st, Folder: folder, StagingDir: filepath.Join(dir, "import")}}
}
