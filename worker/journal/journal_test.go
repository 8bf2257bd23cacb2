package journal_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/ql3/ql3/core/fence"
	"github.com/ql3/ql3/worker/journal"
)

func TestExclusiveLock(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	j, err := journal.Open(dir, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := journal.Open(dir, 0, nil); !errors.Is(err, journal.ErrLocked) {
		t.Fatalf("second open: %v, want ErrLocked", err)
	}
	j.Close()
	j2, err := journal.Open(dir, 0, nil)
	if err != nil {
		t.Fatalf("open after close: %v", err)
	}
	j2.Close()
}

func TestRefusesOpenStateDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := journal.Open(dir, 0, nil); err == nil {
		t.Fatal("a 0755 state dir was accepted")
	}
}

func uuid(n byte) string {
	var u [16]byte
	u[15], u[6], u[8] = n, 0x40, 0x80
	return fence.FormatUUID(u)
}

func TestInboxLimitAndRoundTrip(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	j, err := journal.Open(dir, 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	for i := byte(1); i <= 2; i++ {
		if err := j.PutEntry(journal.Entry{OfferID: uuid(i), Offer: []byte(`{}`), State: journal.Accepted}); err != nil {
			t.Fatal(err)
		}
	}
	if err := j.PutEntry(journal.Entry{OfferID: uuid(3), Offer: []byte(`{}`), State: journal.Accepted}); !errors.Is(err, journal.ErrInboxFull) {
		t.Fatalf("third entry: %v, want ErrInboxFull", err)
	}
	// Updating an existing entry is not a new one.
	if err := j.PutEntry(journal.Entry{OfferID: uuid(2), Offer: []byte(`{}`), State: journal.Launching}); err != nil {
		t.Fatal(err)
	}
	if _, err := journal.Open(dir, journal.HardInbox+1, nil); err == nil {
		t.Fatal("an inbox above the hard limit was accepted")
	}
	es, bad, err := j.Entries()
	if err != nil || len(bad) != 0 || len(es) != 2 || es[1].State != journal.Launching {
		t.Fatalf("entries %+v bad %v err %v", es, bad, err)
	}
	// A corrupt entry is moved aside, not trusted.
	if err := os.WriteFile(filepath.Join(dir, "inbox", uuid(1)+".json"), []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	es, bad, _ = j.Entries()
	if len(es) != 1 || len(bad) != 1 {
		t.Fatalf("entries %d bad %v", len(es), bad)
	}
}

func TestFaultLeavesOldOrNewRecord(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	crash := errors.New("crash")
	for _, step := range []string{"pending.put:write", "pending.put:rename", "pending.put:dirsync"} {
		j, err := journal.Open(dir, 0, func(s string) error {
			if s == step {
				return crash
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		err = j.PutPending(journal.Pending{OfferID: uuid(9), SessionID: "s", Generation: 1})
		if !errors.Is(err, crash) {
			t.Fatalf("%s: %v", step, err)
		}
		j.Close()
		j, _ = journal.Open(dir, 0, nil)
		p, err := j.Pending()
		if err != nil {
			t.Fatalf("%s: a torn record: %v", step, err)
		}
		if (p != nil) != (step == "pending.put:dirsync") {
			t.Fatalf("%s: pending present = %v", step, p != nil)
		}
		_ = j.ClearPending()
		j.Close()
	}
}
