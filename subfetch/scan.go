package subfetch

import (
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"

	"github.com/ql3/ql3/core/scriptmeta"
	"github.com/ql3/ql3/core/subplan"
)

// Scan reads the scripts of a tree (the folder of a subscription, or a
// stage) that pass the filter, with the header each declares. Only
// regular files are read, each up to scriptmeta.MaxScanBytes.
func Scan(dir string, f subplan.Filter) ([]subplan.Script, error) {
	var out []subplan.Script
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.Type().IsRegular() {
			return nil
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if !f.Match(rel) {
			return nil
		}
		file, err := os.OpenFile(p, os.O_RDONLY|noFollow, 0)
		if err != nil {
			return err
		}
		head, err := io.ReadAll(io.LimitReader(file, scriptmeta.MaxScanBytes))
		file.Close()
		if err != nil {
			return err
		}
		out = append(out, subplan.Script{Path: rel, Header: scriptmeta.Parse(rel, head)})
		return nil
	})
	if os.IsNotExist(err) {
		return nil, nil
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, err
}
