package dispatch

import (
	"regexp"
	"strings"
	"testing"
)

// dispatchSQL is every statement the Dispatcher sends.
var dispatchSQL = map[string]string{
	"revision": sqlRevision, "pullSession": sqlPullSession, "candidates": sqlCandidates,
	"claim": sqlClaim, "claimChecked": sqlClaimChecked, "tokenReused": sqlTokenReused,
	"replayLease": sqlReplayLease, "loadLease": sqlLoadLease, "ackStarting": sqlAckStarting,
	"ackRunning": sqlAckRunning, "ackStartingFenced": sqlAckStartingFenced, "ackRunningFenced": sqlAckRunningFenced,
	"lockRun": sqlLockRun, "completeFenced": sqlCompleteFenced, "logStreams": sqlLogStreams, "logAppend": sqlLogAppend,
	"complete": sqlComplete, "lateCallback": sqlLateCallback,
	"claimBatch": sqlClaimBatch, "lockRuns": sqlLockRuns, "runCompleteFenced": sqlRunCompleteFenced,
}

// TestClaimBatchReplayCoversTheBatch: the batch claim is the checked claim
// with exactly its replay condition widened to the batch's offer ids.
func TestClaimBatchReplayCoversTheBatch(t *testing.T) {
	if sqlClaimBatch == sqlClaimChecked {
		t.Fatal("sqlClaimBatch did not replace the replay condition of sqlClaimChecked")
	}
	for _, want := range []string{"l.offer_id = ANY($15::text[])", "l.lease_id <> ALL($16::uuid[])", "CROSS JOIN ok"} {
		if !strings.Contains(sqlClaimBatch, want) {
			t.Errorf("sqlClaimBatch lacks %q", want)
		}
	}
	if strings.Contains(sqlClaimBatch, "l.offer_id = $9::text") {
		t.Error("sqlClaimBatch still checks only its own offer id")
	}
}

var bindParam = regexp.MustCompile(`\$[0-9]+(::)?`)

// TestDispatchSQLTypesEveryBindParameter: seed ADR-0235's lesson, kept
// strictly — every bind parameter of every dispatch statement carries an
// explicit type at every use, so no statement depends on the server's
// inference (PostgreSQL 18 refused an untyped parameter reused in two
// contexts with 42P08).
func TestDispatchSQLTypesEveryBindParameter(t *testing.T) {
	for name, sql := range dispatchSQL {
		uses := bindParam.FindAllString(sql, -1)
		for _, u := range uses {
			if len(u) < 3 || u[len(u)-2:] != "::" {
				t.Errorf("%s: bind parameter %q without an explicit type", name, u)
			}
		}
	}
}

// TestPlanLogAppend: the chunk rules without a database.
func TestPlanLogAppend(t *testing.T) {
	for _, tc := range []struct {
		name        string
		st          logStreamState
		stored, cap int64
		offset      int64
		data        string
		eof         bool
		wantErr     bool
		next        logStreamState
		keep        string
		changed     bool
	}{
		{name: "first chunk", cap: 100, data: "abc", next: logStreamState{length: 3, stored: 3}, keep: "abc", changed: true},
		{name: "append", st: logStreamState{length: 3, stored: 3}, stored: 3, cap: 100, offset: 3, data: "de",
			next: logStreamState{length: 5, stored: 5}, keep: "de", changed: true},
		{name: "overlap keeps the suffix", st: logStreamState{length: 3, stored: 3}, stored: 3, cap: 100, offset: 1, data: "bcde",
			next: logStreamState{length: 5, stored: 5}, keep: "de", changed: true},
		{name: "already delivered", st: logStreamState{length: 3, stored: 3}, stored: 3, cap: 100, offset: 0, data: "ab",
			next: logStreamState{length: 3, stored: 3}},
		{name: "gap", st: logStreamState{length: 3, stored: 3}, cap: 100, offset: 4, data: "x", wantErr: true},
		{name: "cap truncates", st: logStreamState{length: 3, stored: 3}, stored: 8, cap: 10, offset: 3, data: "defg",
			next: logStreamState{length: 7, stored: 5, truncated: true}, keep: "de", changed: true},
		{name: "cap already spent", st: logStreamState{length: 3, stored: 3}, stored: 10, cap: 10, offset: 3, data: "d",
			next: logStreamState{length: 4, stored: 3, truncated: true}, keep: "", changed: true},
		{name: "eof alone", st: logStreamState{length: 3, stored: 3}, stored: 3, cap: 10, offset: 3, eof: true,
			next: logStreamState{length: 3, stored: 3, closed: true}, changed: true},
		{name: "eof before the end", st: logStreamState{length: 3, stored: 3}, cap: 10, offset: 1, eof: true, wantErr: true},
		{name: "after eof", st: logStreamState{length: 3, stored: 3, closed: true}, cap: 10, offset: 3, data: "d", wantErr: true},
		{name: "eof replay", st: logStreamState{length: 3, stored: 3, closed: true}, cap: 10, offset: 2, data: "c", eof: true,
			next: logStreamState{length: 3, stored: 3, closed: true}},
	} {
		p, err := planLogAppend(tc.st, tc.stored, tc.cap, tc.offset, []byte(tc.data), tc.eof)
		if tc.wantErr {
			if err == nil {
				t.Errorf("%s: no error", tc.name)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if p.next != tc.next || p.changed != tc.changed || tc.data[p.keepFrom:p.keepTo] != tc.keep {
			t.Errorf("%s: plan %+v keep %q, want %+v keep %q changed %v", tc.name, p, tc.data[p.keepFrom:p.keepTo],
				tc.next, tc.keep, tc.changed)
		}
	}
}

// FuzzPlanLogAppend: whatever arrives, the plan keeps the stream's
// invariants (length only grows, stored ≤ length, stored within the cap,
// truncated whenever bytes were dropped, kept bytes are a slice of data).
func FuzzPlanLogAppend(f *testing.F) {
	f.Add(int64(3), int64(3), int64(3), int64(10), int64(1), []byte("bcde"), false, false)
	f.Add(int64(0), int64(0), int64(0), int64(1), int64(0), []byte("xy"), true, false)
	f.Fuzz(func(t *testing.T, length, stored, attemptStored, capBytes, offset int64, data []byte, eof, closed bool) {
		if length < 0 || stored < 0 || stored > length || attemptStored < stored || capBytes < 1 || offset < 0 ||
			length > 1<<30 || offset > 1<<30 || attemptStored > 1<<31 || capBytes > 1<<31 {
			t.Skip()
		}
		st := logStreamState{length: length, stored: stored, truncated: stored != length, closed: closed}
		p, err := planLogAppend(st, attemptStored, capBytes, offset, data, eof)
		if err != nil {
			return
		}
		n := p.next
		if n.length < length || n.stored < stored || n.stored > n.length || (!n.truncated && n.stored != n.length) {
			t.Fatalf("invariants broken: %+v from %+v", n, st)
		}
		if kept := n.stored - stored; kept != int64(p.keepTo-p.keepFrom) || kept > max(capBytes-attemptStored, 0) {
			t.Fatalf("kept %d bytes, slice %d..%d, room %d", kept, p.keepFrom, p.keepTo, capBytes-attemptStored)
		}
		if p.keepFrom < 0 || p.keepTo > len(data) || p.keepFrom > p.keepTo {
			t.Fatalf("keep %d..%d of %d", p.keepFrom, p.keepTo, len(data))
		}
		if p.offset != length {
			t.Fatalf("chunk stored at %d, stream length was %d", p.offset, length)
		}
	})
}
