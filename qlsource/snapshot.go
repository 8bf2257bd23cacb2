// Package qlsource reads a QingLong 2 data directory for the import
// (ADR 0056) without changing a byte of it: the database is copied
// (with its -wal and -journal files) into a private temporary folder and
// the copy is opened read-only; the scripts folder is walked with lstat
// (no link followed) and read through O_NOFOLLOW descriptors; config.sh
// is read as text and never executed.
package qlsource

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/ql3/ql3/core/errs"
)

// Layout of a QingLong data directory.
const (
	DBFile     = "db/database.sqlite"
	ScriptsDir = "scripts"
	ConfigFile = "config/config.sh"
)

// MaxDBBytes bounds the database copied for a snapshot (a QingLong
// database with its run logs elsewhere is a few MiB).
const MaxDBBytes = 1 << 30

// MaxConfigBytes bounds config.sh.
const MaxConfigBytes = 1 << 20

// snapshotAttempts is how many times a snapshot is taken before giving up
// on a database that keeps changing under the copy.
const snapshotAttempts = 5

// dbCompanions are the files SQLite keeps beside a database; a snapshot
// copies the ones that exist so the copy opens to the committed state.
var dbCompanions = []string{"", "-wal", "-journal"}

// snapshot copies the database of dataDir into tmp and returns the
// copy's path. A running QingLong may write while the files are copied,
// so the copy is repeated until two consecutive copies are identical
// (the source files are only ever opened O_RDONLY).
func snapshot(dataDir, tmp string) (string, error) {
	src := filepath.Join(dataDir, filepath.FromSlash(DBFile))
	st, err := os.Lstat(src)
	if err != nil {
		return "", errs.Invalidf("from", "%s is not a QingLong data directory: %v", dataDir, err)
	}
	if !st.Mode().IsRegular() {
		return "", errs.Invalidf("from", "%s is not a regular file", DBFile)
	}
	dst := filepath.Join(tmp, "database.sqlite")
	var prev []byte
	for i := 0; i < snapshotAttempts; i++ {
		sum, err := copyDB(src, dst)
		if err != nil {
			return "", err
		}
		if prev != nil && bytes.Equal(prev, sum) {
			return dst, nil
		}
		prev = sum
	}
	return "", errs.E(errs.Unavailable, "from", "the QingLong database changed during %d consecutive copies: stop QingLong or retry", snapshotAttempts)
}

// copyDB copies the database and its companions and returns one digest
// over all of them.
func copyDB(src, dst string) ([]byte, error) {
	h := sha256.New()
	for _, suffix := range dbCompanions {
		_ = os.Remove(dst + suffix)
		n, err := copyFile(src+suffix, dst+suffix, h)
		switch {
		case os.IsNotExist(err) && suffix != "":
			fmt.Fprintf(h, "absent %s\n", suffix)
			continue
		case err != nil:
			return nil, err
		}
		fmt.Fprintf(h, "%s %d\n", suffix, n)
	}
	return h.Sum(nil), nil
}

func copyFile(src, dst string, h io.Writer) (int64, error) {
	in, err := openNoFollow(src)
	if err != nil {
		return 0, err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return 0, err
	}
	n, err := io.Copy(io.MultiWriter(out, h), io.LimitReader(in, MaxDBBytes+1))
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err == nil && n > MaxDBBytes {
		err = errs.TooLargef("from", "%s is larger than %d bytes", filepath.Base(src), MaxDBBytes)
	}
	return n, err
}
