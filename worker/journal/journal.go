// Package journal is the worker's durable state directory: an exclusive
// lock (two processes never share one identity's journal), the pending
// pull, the inbox of offers and what became of each, and the log spool.
//
// Every record is a small JSON file written by write-temp → fsync → rename
// → fsync(dir), so after a crash a record is either the old or the new
// version, never a mix. The order of writes is the protocol (ADR 0018):
//
//	pending pull written        before the pull request is sent
//	offer written to the inbox  before the pending pull is cleared
//	entry "launching"           before the process is spawned
//	entry "started"             after it was spawned (with its identity)
//	entry "finished"            with the completion body, kept until the
//	                            authority's receipt; the spool goes with it
//
// A fault hook (tests) can fail any step to simulate a crash right there.
package journal

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"

	"github.com/ql3/ql3/core/fence"
)

// Limits.
const (
	DefaultInbox  = 64
	HardInbox     = 1024
	maxRecordSize = 192 << 10 // an entry holds an offer (≤ 128 KiB) plus bookkeeping
)

// ErrLocked is returned when another process holds the state directory.
var ErrLocked = errors.New("state directory is locked by another ql3-worker process")

// ErrInboxFull is returned when the inbox already holds its limit.
var ErrInboxFull = errors.New("inbox is full")

// Fault is called before each journal step with the step's name; a non-nil
// error aborts the step there (tests simulate a crash with it).
type Fault func(step string) error

// Pending is the pull that was (or is about to be) sent and has no definite
// answer yet. The same values are sent on every retry.
type Pending struct {
	V          int              `json:"v"`
	OfferID    string           `json:"offerId"`
	LeaseToken fence.LeaseToken `json:"leaseToken"`
	SessionID  string           `json:"sessionId"`
	Generation int64            `json:"generation"`
	Tries      int              `json:"tries"` // requests sent so far (bounded)
}

// State is what became of an inbox entry.
type State string

// Entry states, in order. Fenced means the worker stopped the process on
// its own (lease lapsed, revoked, drain deadline) and will not complete it.
const (
	Accepted  State = "accepted"
	Launching State = "launching"
	Started   State = "started"
	Finished  State = "finished"
	Fenced    State = "fenced"
)

// Entry is one offer the worker received and everything it did with it.
type Entry struct {
	V          int              `json:"v"`
	OfferID    string           `json:"offerId"`
	Offer      json.RawMessage  `json:"offer"` // as received; decoded again on load
	LeaseToken fence.LeaseToken `json:"leaseToken"`
	State      State            `json:"state"`
	// StartAcked: the starting Ack got a definite answer (the start
	// barrier is passed on the authority).
	StartAcked bool `json:"startAcked,omitempty"`
	// RunningAcked: the running Ack got a definite answer.
	RunningAcked bool `json:"runningAcked,omitempty"`
	// Process is the executor's identity of the spawned group leader.
	Process string `json:"process,omitempty"`
	// BootID is the kernel boot the process was started in.
	BootID string `json:"bootId,omitempty"`
	// Completion is the encoded protocol.Completion, set with Finished.
	Completion json.RawMessage `json:"completion,omitempty"`
	// FenceReason says why a Fenced entry was stopped locally.
	FenceReason string `json:"fenceReason,omitempty"`
}

// Journal is an open, locked state directory.
type Journal struct {
	dir   string
	lock  *os.File
	fault Fault
	max   int
}

// Open creates (0700) and locks dir. inboxMax 0 → DefaultInbox.
func Open(dir string, inboxMax int, fault Fault) (*Journal, error) {
	if inboxMax == 0 {
		inboxMax = DefaultInbox
	}
	if inboxMax < 1 || inboxMax > HardInbox {
		return nil, fmt.Errorf("inbox: must be 1..%d entries, got %d", HardInbox, inboxMax)
	}
	if dir == "" {
		return nil, errors.New("stateDir: must be set")
	}
	for _, d := range []string{dir, filepath.Join(dir, "inbox"), filepath.Join(dir, "spool")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, fmt.Errorf("state directory: %w", err)
		}
		st, err := os.Lstat(d)
		if err != nil {
			return nil, fmt.Errorf("state directory: %w", err)
		}
		if !st.IsDir() {
			return nil, fmt.Errorf("state directory: %s is not a directory", d)
		}
		if st.Mode().Perm()&0o077 != 0 {
			return nil, fmt.Errorf("state directory: %s has mode %04o; it must be 0700", d, st.Mode().Perm())
		}
	}
	f, err := os.OpenFile(filepath.Join(dir, "lock"), os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("state directory lock: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, ErrLocked
		}
		return nil, fmt.Errorf("state directory lock: %w", err)
	}
	if fault == nil {
		fault = func(string) error { return nil }
	}
	j := &Journal{dir: dir, lock: f, fault: fault, max: inboxMax}
	j.sweepTemp()
	return j, nil
}

// Close releases the lock.
func (j *Journal) Close() error {
	if j.lock == nil {
		return nil
	}
	err := j.lock.Close() // closing the descriptor drops the flock
	j.lock = nil
	return err
}

// InboxMax is the inbox limit.
func (j *Journal) InboxMax() int { return j.max }

// sweepTemp removes temp files a crash left behind.
func (j *Journal) sweepTemp() {
	for _, d := range []string{j.dir, filepath.Join(j.dir, "inbox")} {
		names, _ := os.ReadDir(d)
		for _, n := range names {
			if strings.HasSuffix(n.Name(), ".tmp") {
				_ = os.Remove(filepath.Join(d, n.Name()))
			}
		}
	}
}

// writeAtomic writes data to path by temp file, fsync, rename and fsync of
// the directory. step names the fault points: step+":write",
// step+":rename", step+":dirsync".
func (j *Journal) writeAtomic(step, path string, data []byte) error {
	if err := j.fault(step + ":write"); err != nil {
		return err
	}
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0o600)
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
	if err := j.fault(step + ":rename"); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	if err := j.fault(step + ":dirsync"); err != nil {
		return err
	}
	return syncDir(filepath.Dir(path))
}

// remove deletes path durably; fault points step+":remove", step+":dirsync".
func (j *Journal) remove(step, path string) error {
	if err := j.fault(step + ":remove"); err != nil {
		return err
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	if err := j.fault(step + ":dirsync"); err != nil {
		return err
	}
	return syncDir(filepath.Dir(path))
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, syscall.EINVAL) {
		return err
	}
	return nil
}

func readRecord(path string, v any) (bool, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxRecordSize+1))
	if err != nil {
		return false, err
	}
	if len(data) > maxRecordSize {
		return false, fmt.Errorf("%s is larger than %d bytes", filepath.Base(path), maxRecordSize)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return false, fmt.Errorf("%s: %w", filepath.Base(path), err)
	}
	return true, nil
}

func (j *Journal) pendingPath() string { return filepath.Join(j.dir, "pending.json") }

// Pending returns the pending pull, if any.
func (j *Journal) Pending() (*Pending, error) {
	var p Pending
	ok, err := readRecord(j.pendingPath(), &p)
	if err != nil || !ok {
		return nil, err
	}
	if p.V != 1 {
		return nil, fmt.Errorf("pending.json: unknown version %d", p.V)
	}
	return &p, nil
}

// PutPending writes the pending pull (before the request is sent).
func (j *Journal) PutPending(p Pending) error {
	p.V = 1
	data, err := json.Marshal(p)
	if err != nil {
		return err
	}
	return j.writeAtomic("pending.put", j.pendingPath(), data)
}

// ClearPending removes the pending pull (after a definite answer, with the
// offer, if any, already in the inbox).
func (j *Journal) ClearPending() error {
	return j.remove("pending.clear", j.pendingPath())
}

func (j *Journal) entryPath(offerID string) string {
	return filepath.Join(j.dir, "inbox", offerID+".json")
}

// validOfferID keeps ids usable as file names: canonical UUIDs only.
func validOfferID(id string) error {
	_, err := fence.ParseUUID("offerId", id)
	return err
}

// PutEntry writes an inbox entry (creating it or replacing its previous
// state). A new entry beyond the inbox limit is ErrInboxFull.
func (j *Journal) PutEntry(e Entry) error {
	if err := validOfferID(e.OfferID); err != nil {
		return err
	}
	path := j.entryPath(e.OfferID)
	if _, err := os.Lstat(path); errors.Is(err, os.ErrNotExist) {
		n, err := j.count()
		if err != nil {
			return err
		}
		if n >= j.max {
			return ErrInboxFull
		}
	}
	e.V = 1
	data, err := json.Marshal(e)
	if err != nil {
		return err
	}
	if len(data) > maxRecordSize {
		return fmt.Errorf("inbox entry is %d bytes, limit is %d", len(data), maxRecordSize)
	}
	return j.writeAtomic("entry."+string(e.State), path, data)
}

// DropEntry removes an inbox entry and its spool.
func (j *Journal) DropEntry(offerID string) error {
	if err := validOfferID(offerID); err != nil {
		return err
	}
	if err := j.remove("entry.drop", j.entryPath(offerID)); err != nil {
		return err
	}
	if err := os.Remove(j.SpoolPath(offerID)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

func (j *Journal) count() (int, error) {
	names, err := os.ReadDir(filepath.Join(j.dir, "inbox"))
	if err != nil {
		return 0, err
	}
	n := 0
	for _, e := range names {
		if strings.HasSuffix(e.Name(), ".json") {
			n++
		}
	}
	return n, nil
}

// Entries returns every inbox entry, ordered by offer id. An entry that
// does not decode is moved aside (".bad") and reported in bad.
func (j *Journal) Entries() (entries []Entry, bad []string, err error) {
	dir := filepath.Join(j.dir, "inbox")
	names, err := os.ReadDir(dir)
	if err != nil {
		return nil, nil, err
	}
	sort.Slice(names, func(a, b int) bool { return names[a].Name() < names[b].Name() })
	for _, n := range names {
		id, ok := strings.CutSuffix(n.Name(), ".json")
		if !ok {
			continue
		}
		var e Entry
		path := filepath.Join(dir, n.Name())
		found, rerr := readRecord(path, &e)
		if rerr == nil && found && (e.V != 1 || e.OfferID != id) {
			rerr = fmt.Errorf("%s: version or offer id mismatch", n.Name())
		}
		if rerr != nil {
			_ = os.Rename(path, path+".bad")
			bad = append(bad, id)
			continue
		}
		if found {
			entries = append(entries, e)
		}
	}
	return entries, bad, nil
}

// SpoolPath is the log spool file of an entry.
func (j *Journal) SpoolPath(offerID string) string {
	return filepath.Join(j.dir, "spool", offerID+".log")
}
