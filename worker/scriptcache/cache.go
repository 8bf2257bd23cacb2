// Package scriptcache is the worker's cache of script trees (ADR 0052). A
// script task's offer names the digest of the tree its execution revision
// pins; Ensure returns a read-only directory holding exactly that tree:
//
//   - the manifest (path, size, executable bit, SHA-256 of every file) is
//     read from the authority a page at a time and must hash to the digest
//     (core/scriptpath.TreeDigest), or nothing runs;
//   - blobs the cache lacks are fetched by SHA-256 in bounded ranges into
//     blobs/<sha>.part; a transfer cut by a crash or a lost connection
//     resumes from the bytes already on disk; a blob is renamed into place
//     only once its SHA-256 is right;
//   - the tree is materialised under trees/<digest> (files 0444, or 0555
//     when executable; folders 0555) from verified blobs, then its manifest
//     is written beside it: a tree without its manifest is unfinished and
//     is built again;
//   - before every use the materialised files are hashed against the
//     manifest: a tampered file (or blob) is detected, deleted and fetched
//     again, never run.
//
// The cache is bounded (Options.MaxBytes, small on a router): after a tree
// is ready the least recently used other trees, then the blobs no kept
// tree names, are deleted until it fits. Everything lives on disk, so a
// replay of the Run or a restart of the worker reuses it.
package scriptcache

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ql3/ql3/core/canonjson"
	"github.com/ql3/ql3/core/protocol"
	"github.com/ql3/ql3/core/scriptpath"
)

// Fetcher reads a leased Run's tree from the authority.
type Fetcher interface {
	// TreePage returns the manifest files after path after.
	TreePage(ctx context.Context, after string) (protocol.ScriptTreePage, error)
	// Blob returns up to limit bytes of blob sum from offset, and its size.
	Blob(ctx context.Context, sum string, offset, limit int64) (data []byte, size int64, err error)
}

// Options configure a Cache.
type Options struct {
	// MaxBytes bounds blobs plus materialised trees; 0 means
	// DefaultMaxBytes. A tree larger than the bound still runs (the cache
	// then holds that tree alone).
	MaxBytes int64
	// Now stamps a tree's last use (LRU); nil means time.Now.
	Now func() time.Time
}

// Cache bounds per worker profile: a router keeps a few small trees, a
// node many. DefaultMaxBytes is the node's.
const (
	RouterMaxBytes  = 8 << 20
	DefaultMaxBytes = 256 << 20
)

// Cache is one worker's script cache. It is safe for concurrent use (one
// Ensure at a time).
type Cache struct {
	dir  string
	opts Options
	mu   sync.Mutex
}

// Open opens (creating) the cache under dir.
func Open(dir string, opts Options) (*Cache, error) {
	if opts.MaxBytes <= 0 {
		opts.MaxBytes = DefaultMaxBytes
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	for _, d := range []string{dir, filepath.Join(dir, "blobs"), filepath.Join(dir, "trees")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, fmt.Errorf("script cache: %w", err)
		}
	}
	return &Cache{dir: dir, opts: opts}, nil
}

// Stats says what one Ensure did.
type Stats struct {
	Reused         bool  // the materialised tree was there and verified
	BlobsFetched   int   // blobs downloaded (wholly or the rest of a partial one)
	BytesFetched   int64 // bytes downloaded
	Refetched      int   // files or blobs found tampered and fetched again
	ResumedAtBytes int64 // bytes a partial download already had
}

// ErrDigest marks a tree or blob that does not match its digest: it is
// never run.
var ErrDigest = errors.New("script tree does not match its digest")

// Ensure returns the directory holding the verified tree digest (the
// offer's ScriptTree, "sha256:<hex>").
func (c *Cache) Ensure(ctx context.Context, digest string, f Fetcher) (string, Stats, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var st Stats
	d, err := canonjson.ParseDigest(digest)
	if err != nil {
		return "", st, fmt.Errorf("%w: %q is not a tree digest", ErrDigest, digest)
	}
	name := hex.EncodeToString(d[:])
	root := filepath.Join(c.dir, "trees", name)
	manifestPath := root + ".manifest"
	if files, err := readManifest(manifestPath, d); err == nil {
		bad, err := verifyTree(root, files)
		if err != nil {
			return "", st, err
		}
		if len(bad) == 0 {
			now := c.opts.Now()
			_ = os.Chtimes(manifestPath, now, now)
			st.Reused = true
			return root, st, nil
		}
		// Tampered: drop the tree and the blobs of the bad files.
		for _, b := range bad {
			_ = os.Remove(c.blobPath(b))
		}
		st.Refetched += len(bad)
		if err := removeTree(root, manifestPath); err != nil {
			return "", st, err
		}
	}
	files, err := fetchManifest(ctx, f, d)
	if err != nil {
		return "", st, err
	}
	for _, tf := range files {
		if err := c.ensureBlob(ctx, f, tf, &st); err != nil {
			return "", st, err
		}
	}
	if err := c.materialize(root, manifestPath, files); err != nil {
		return "", st, err
	}
	now := c.opts.Now()
	_ = os.Chtimes(manifestPath, now, now)
	c.evict(name)
	return root, st, nil
}

func (c *Cache) blobPath(sum [32]byte) string {
	return filepath.Join(c.dir, "blobs", hex.EncodeToString(sum[:]))
}

// fetchManifest reads every page and checks the whole against d.
func fetchManifest(ctx context.Context, f Fetcher, d canonjson.Digest) ([]scriptpath.TreeFile, error) {
	var files []scriptpath.TreeFile
	after := ""
	for {
		page, err := f.TreePage(ctx, after)
		if err != nil {
			return nil, fmt.Errorf("script tree manifest: %w", err)
		}
		if page.Digest != d.String() {
			return nil, fmt.Errorf("%w: the authority answered for %s", ErrDigest, page.Digest)
		}
		for i, pf := range page.Files {
			tf, err := pf.TreeFile("files[" + strconv.Itoa(i) + "]")
			if err != nil {
				return nil, err
			}
			if len(files) > 0 && files[len(files)-1].Path >= tf.Path {
				return nil, fmt.Errorf("%w: manifest pages out of order at %q", ErrDigest, tf.Path)
			}
			files = append(files, tf)
		}
		if len(files) > scriptpath.MaxEntries {
			return nil, fmt.Errorf("%w: more than %d files", ErrDigest, scriptpath.MaxEntries)
		}
		if !page.More || len(page.Files) == 0 {
			break
		}
		after = files[len(files)-1].Path
	}
	got, err := scriptpath.TreeDigest(files)
	if err != nil {
		return nil, err
	}
	if got != d {
		return nil, fmt.Errorf("%w: the manifest hashes to %s, the offer pins %s", ErrDigest, got, d)
	}
	return files, nil
}

// ensureBlob makes blobs/<sha> hold the verified content of tf, resuming
// a partial download.
func (c *Cache) ensureBlob(ctx context.Context, f Fetcher, tf scriptpath.TreeFile, st *Stats) error {
	final := c.blobPath(tf.SHA256)
	if ok, err := fileHashes(final, tf.Size, tf.SHA256); err != nil {
		return err
	} else if ok {
		return nil
	}
	if _, err := os.Lstat(final); err == nil {
		st.Refetched++ // present but wrong: tampered
		if err := os.Remove(final); err != nil {
			return err
		}
	}
	part := final + ".part"
	out, err := os.OpenFile(part, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer out.Close()
	info, err := out.Stat()
	if err != nil {
		return err
	}
	off := info.Size()
	if off > tf.Size {
		if err := out.Truncate(0); err != nil {
			return err
		}
		off = 0
	}
	if off > 0 {
		st.ResumedAtBytes += off
	}
	sum := hex.EncodeToString(tf.SHA256[:])
	for off < tf.Size {
		data, size, err := f.Blob(ctx, sum, off, protocol.MaxScriptBlobChunk)
		if err != nil {
			return fmt.Errorf("script blob %.12s at %d: %w", sum, off, err)
		}
		if size != tf.Size || len(data) == 0 || off+int64(len(data)) > size {
			return fmt.Errorf("%w: blob %.12s answered %d bytes at %d of %d (the manifest says %d)", ErrDigest, sum, len(data), off, size, tf.Size)
		}
		if _, err := out.Write(data); err != nil {
			return err
		}
		off += int64(len(data))
		st.BytesFetched += int64(len(data))
	}
	if err := out.Sync(); err != nil {
		return err
	}
	if ok, err := fileHashes(part, tf.Size, tf.SHA256); err != nil {
		return err
	} else if !ok {
		_ = os.Remove(part)
		return fmt.Errorf("%w: blob %.12s does not hash to its name", ErrDigest, sum)
	}
	if err := os.Chmod(part, 0o400); err != nil {
		return err
	}
	st.BlobsFetched++
	return os.Rename(part, final)
}

// fileHashes reports whether p is a regular file (not a link) of size
// bytes hashing to sum; a missing file is false without error.
func fileHashes(p string, size int64, sum [32]byte) (bool, error) {
	fi, err := os.Lstat(p)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if !fi.Mode().IsRegular() || fi.Size() != size {
		return false, nil
	}
	f, err := os.Open(p)
	if err != nil {
		return false, err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return false, err
	}
	return bytes.Equal(h.Sum(nil), sum[:]), nil
}

// verifyTree hashes every file of a materialised tree and returns the
// blobs of those that do not match.
func verifyTree(root string, files []scriptpath.TreeFile) ([][32]byte, error) {
	var bad [][32]byte
	for _, tf := range files {
		ok, err := fileHashes(filepath.Join(root, filepath.FromSlash(tf.Path)), tf.Size, tf.SHA256)
		if err != nil {
			return nil, err
		}
		if !ok {
			bad = append(bad, tf.SHA256)
		}
	}
	return bad, nil
}

// materialize builds the tree in a temporary folder from verified blobs,
// makes it read-only, renames it into place and writes its manifest last.
func (c *Cache) materialize(root, manifestPath string, files []scriptpath.TreeFile) error {
	if err := removeTree(root, manifestPath); err != nil {
		return err
	}
	tmp := filepath.Join(filepath.Dir(root), ".build-"+filepath.Base(root))
	if err := removeAll(tmp); err != nil {
		return err
	}
	if err := os.Mkdir(tmp, 0o700); err != nil {
		return err
	}
	defer func() { _ = removeAll(tmp) }()
	var dirs []string
	for _, tf := range files {
		p := filepath.Join(tmp, filepath.FromSlash(tf.Path))
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			return err
		}
		for d := filepath.Dir(p); d != tmp; d = filepath.Dir(d) {
			dirs = append(dirs, d)
		}
		if err := copyFile(c.blobPath(tf.SHA256), p); err != nil {
			return err
		}
		mode := os.FileMode(0o444)
		if tf.Executable {
			mode = 0o555
		}
		if err := os.Chmod(p, mode); err != nil {
			return err
		}
	}
	if bad, err := verifyTree(tmp, files); err != nil || len(bad) > 0 {
		if err == nil {
			err = fmt.Errorf("%w: a blob changed while the tree was built", ErrDigest)
		}
		return err
	}
	sort.Slice(dirs, func(i, j int) bool { return len(dirs[i]) > len(dirs[j]) })
	for _, d := range append(dirs, tmp) {
		if err := os.Chmod(d, 0o555); err != nil {
			return err
		}
	}
	if err := os.Rename(tmp, root); err != nil {
		return err
	}
	var b strings.Builder
	for _, tf := range files {
		x := "-"
		if tf.Executable {
			x = "x"
		}
		fmt.Fprintf(&b, "%s %d %s %s\n", x, tf.Size, hex.EncodeToString(tf.SHA256[:]), tf.Path)
	}
	return writeFileSync(manifestPath, []byte(b.String()))
}

// readManifest reads a tree's manifest and checks it still hashes to d.
func readManifest(p string, d canonjson.Digest) ([]scriptpath.TreeFile, error) {
	data, err := os.ReadFile(p)
	if err != nil {
		return nil, err
	}
	var files []scriptpath.TreeFile
	for _, line := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
		if line == "" {
			continue
		}
		parts := strings.SplitN(line, " ", 4)
		if len(parts) != 4 {
			return nil, fmt.Errorf("%w: manifest line %q", ErrDigest, line)
		}
		size, err := strconv.ParseInt(parts[1], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%w: manifest size %q", ErrDigest, parts[1])
		}
		tf := scriptpath.TreeFile{Path: parts[3], Size: size, Executable: parts[0] == "x"}
		if _, err := hex.Decode(tf.SHA256[:], []byte(parts[2])); err != nil {
			return nil, fmt.Errorf("%w: manifest digest %q", ErrDigest, parts[2])
		}
		files = append(files, tf)
	}
	got, err := scriptpath.TreeDigest(files)
	if err != nil || got != d {
		return nil, fmt.Errorf("%w: the stored manifest does not hash to %s", ErrDigest, d)
	}
	return files, nil
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	if err := out.Sync(); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

func writeFileSync(p string, data []byte) error {
	tmp := p + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, p)
}

// removeTree deletes a materialised tree (read-only folders included) and
// its manifest; the manifest goes first, so a crash in between leaves an
// unfinished tree that is built again.
func removeTree(root, manifestPath string) error {
	if err := os.Remove(manifestPath); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return removeAll(root)
}

// removeAll is os.RemoveAll after making every folder writable again.
func removeAll(root string) error {
	_ = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			_ = os.Chmod(p, 0o700)
		}
		return nil
	})
	return os.RemoveAll(root)
}
