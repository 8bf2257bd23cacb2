package scriptcache

import (
	"encoding/hex"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/ql3/ql3/core/canonjson"
)

// evict deletes the least recently used trees other than keep, then the
// blobs no remaining tree names, until the cache fits Options.MaxBytes.
func (c *Cache) evict(keep string) {
	type tree struct {
		name  string
		used  int64 // manifest mtime, ns
		bytes int64
		blobs []string
	}
	var trees []tree
	var usage int64
	entries, _ := os.ReadDir(filepath.Join(c.dir, "trees"))
	for _, e := range entries {
		name, ok := strings.CutSuffix(e.Name(), ".manifest")
		if !ok {
			continue
		}
		raw, err := hex.DecodeString(name)
		if err != nil || len(raw) != 32 {
			continue
		}
		mp := filepath.Join(c.dir, "trees", e.Name())
		files, err := readManifest(mp, canonjson.Digest(raw))
		info, serr := os.Stat(mp)
		if err != nil || serr != nil {
			_ = removeTree(filepath.Join(c.dir, "trees", name), mp)
			continue
		}
		t := tree{name: name, used: info.ModTime().UnixNano()}
		for _, f := range files {
			t.bytes += f.Size
			t.blobs = append(t.blobs, hex.EncodeToString(f.SHA256[:]))
		}
		usage += t.bytes
		trees = append(trees, t)
	}
	blobSizes := map[string]int64{}
	bents, _ := os.ReadDir(filepath.Join(c.dir, "blobs"))
	for _, e := range bents {
		if info, err := e.Info(); err == nil {
			blobSizes[e.Name()] = info.Size()
			usage += info.Size()
		}
	}
	if usage <= c.opts.MaxBytes {
		return
	}
	sort.Slice(trees, func(i, j int) bool { return trees[i].used < trees[j].used })
	kept := trees[:0]
	for _, t := range trees {
		if usage > c.opts.MaxBytes && t.name != keep {
			root := filepath.Join(c.dir, "trees", t.name)
			if removeTree(root, root+".manifest") == nil {
				usage -= t.bytes
				continue
			}
		}
		kept = append(kept, t)
	}
	named := map[string]bool{}
	for _, t := range kept {
		for _, b := range t.blobs {
			named[b] = true
		}
	}
	names := make([]string, 0, len(blobSizes))
	for n := range blobSizes {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if usage <= c.opts.MaxBytes {
			return
		}
		if named[strings.TrimSuffix(n, ".part")] && !strings.HasSuffix(n, ".part") {
			continue
		}
		if os.Remove(filepath.Join(c.dir, "blobs", n)) == nil {
			usage -= blobSizes[n]
		}
	}
}
