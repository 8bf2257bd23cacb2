// Package envcrypt is the edge's side of env store encryption at rest
// (ADR 0038): the key file. The format of keys and ciphertexts (AES-256-GCM
// data key wrapped by a key-encryption key, values bound to entry id and
// name) is core/envseal's, shared with the control plane; this package
// reads, creates and replaces the file that holds the KEK.
//
// Key file: the KEK's one-line text form (envseal), created 0600 with
// O_EXCL on first start, replaced atomically (temporary file, fsync,
// rename, directory fsync) by a rotation. A key file that the group or
// others may read or write is refused, as is anything that is not a
// regular file (a symlink included) or is larger than 256 bytes. Every
// error names the file.
package envcrypt

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/ql3/ql3/core/envseal"
)

// DefaultKeyFileName is the key file's name inside the data directory.
const DefaultKeyFileName = "env.key"

const maxKeyFile = envseal.MaxKeyFileBytes

// Cipher seals and opens values under the data key (core/envseal).
type Cipher = envseal.Cipher

// NewCipher and NewDataKey are core/envseal's.
var (
	NewCipher  = envseal.NewCipher
	NewDataKey = envseal.NewDataKey
)

// KEK is a key-encryption key with the key file it belongs to.
type KEK struct {
	envseal.KEK
	path string
}

// Path is the key file the KEK came from or goes to.
func (k *KEK) Path() string { return k.path }

// NewKEK returns a fresh random KEK destined for path.
func NewKEK(path string) (*KEK, error) {
	k, err := envseal.NewKEK()
	if err != nil {
		return nil, err
	}
	return &KEK{KEK: k, path: path}, nil
}

// Unwrap opens a data key; a wrong KEK is a KeyFileError naming the file.
func (k *KEK) Unwrap(wrapped []byte) ([]byte, error) {
	dk, err := k.KEK.Unwrap(wrapped)
	if err != nil {
		return nil, &KeyFileError{Path: k.path, Reason: "does not open this database's env data key (wrong or damaged key file)"}
	}
	return dk, nil
}

// KeyFileError says what is wrong with a key file; it always names it.
type KeyFileError struct {
	Path   string
	Reason string
	Err    error
}

func (e *KeyFileError) Error() string {
	msg := "env key file " + e.Path + ": " + e.Reason
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

func (e *KeyFileError) Unwrap() error { return e.Err }

// ErrNoKeyFile is wrapped by LoadKeyFile when the file does not exist.
var ErrNoKeyFile = errors.New("no such key file")

// LoadKeyFile reads a KEK from path. The file must be a regular file, not
// readable by group or others, at most 256 bytes, in the key format.
func LoadKeyFile(path string) (*KEK, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|noFollow, 0)
	if errors.Is(err, os.ErrNotExist) {
		return nil, &KeyFileError{Path: path, Reason: "does not exist", Err: ErrNoKeyFile}
	}
	if err != nil {
		return nil, &KeyFileError{Path: path, Reason: "cannot be opened", Err: err}
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, &KeyFileError{Path: path, Reason: "cannot be read", Err: err}
	}
	if problem := envseal.KeyFileProblem(st.Mode().IsRegular(), uint32(st.Mode().Perm()), st.Size()); problem != "" {
		return nil, &KeyFileError{Path: path, Reason: problem}
	}
	raw, err := io.ReadAll(io.LimitReader(f, maxKeyFile+1))
	if err != nil {
		return nil, &KeyFileError{Path: path, Reason: "cannot be read", Err: err}
	}
	if len(raw) > maxKeyFile {
		return nil, &KeyFileError{Path: path, Reason: fmt.Sprintf("is larger than %d bytes; it is not an env key file", maxKeyFile)}
	}
	k, err := envseal.ParseKEK(string(raw))
	if err != nil {
		return nil, &KeyFileError{Path: path, Reason: "is not usable", Err: err}
	}
	return &KEK{KEK: k, path: path}, nil
}

// CreateKeyFile writes a fresh KEK to path, which must not exist yet
// (O_EXCL, 0600), and syncs the file and its directory.
func CreateKeyFile(path string) (*KEK, error) {
	k, err := NewKEK(path)
	if err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|noFollow, 0o600)
	if err != nil {
		return nil, &KeyFileError{Path: path, Reason: "cannot be created", Err: err}
	}
	if err := writeKey(f, k); err != nil {
		os.Remove(path)
		return nil, &KeyFileError{Path: path, Reason: "cannot be written", Err: err}
	}
	if err := syncDir(filepath.Dir(path)); err != nil {
		return nil, &KeyFileError{Path: path, Reason: "directory cannot be synced", Err: err}
	}
	return k, nil
}

// ReplaceKeyFile writes k to k.Path() atomically: a temporary 0600 file in
// the same directory, fsync, rename over the old file, directory fsync.
func ReplaceKeyFile(k *KEK) error {
	dir := filepath.Dir(k.path)
	f, err := os.CreateTemp(dir, ".env.key-*")
	if err != nil {
		return &KeyFileError{Path: k.path, Reason: "cannot create a temporary file next to it", Err: err}
	}
	tmp := f.Name()
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		os.Remove(tmp)
		return &KeyFileError{Path: k.path, Reason: "cannot restrict the temporary file", Err: err}
	}
	if err := writeKey(f, k); err != nil {
		os.Remove(tmp)
		return &KeyFileError{Path: k.path, Reason: "cannot be written", Err: err}
	}
	if err := os.Rename(tmp, k.path); err != nil {
		os.Remove(tmp)
		return &KeyFileError{Path: k.path, Reason: "cannot be replaced", Err: err}
	}
	if err := syncDir(dir); err != nil {
		return &KeyFileError{Path: k.path, Reason: "directory cannot be synced", Err: err}
	}
	return nil
}

func writeKey(f *os.File, k *KEK) error {
	_, err := f.WriteString(k.Text() + "\n")
	if err == nil {
		err = f.Sync()
	}
	return errors.Join(err, f.Close())
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
