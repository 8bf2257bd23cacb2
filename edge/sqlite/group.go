package sqlite

import (
	"context"
	"errors"
	"runtime/debug"
	"sync"
	"sync/atomic"

	"github.com/ql3/ql3/core/errs"
)

// Group commit (ADR 0065). Every writer transaction of the store goes
// through one queue: a caller enqueues its change (one function, or a batch
// of them such as a scheduler round's admissions) and waits; whichever
// caller holds the writer token runs everything queued so far in ONE
// BEGIN IMMEDIATE transaction, each member inside its own SAVEPOINT, and
// commits once. A member whose function fails is rolled back to its
// savepoint and gets its own error; the other members commit. No caller
// returns before the commit that contains its change (or its failure) is
// known, so nobody acts on an uncommitted transition. The group commits
// with synchronous=FULL when any member asked for a durable commit (which
// also makes the others durable).
//
// A group of one function runs exactly as before grouping: no savepoint,
// an error (or a panic, which goes on in the caller) rolls the whole
// transaction back. In a larger group a member's panic is its own error.

// maxGroupMembers bounds the functions run in one transaction: a writer
// holds the database lock while it runs them, and readers of the WAL see
// nothing of the group until its commit.
const maxGroupMembers = 256

// writeFn is the body of a writer transaction (see write).
type writeFn func(tx *wtx, sg *signals) error

// writeReq is one caller's part of a group.
type writeReq struct {
	ctx     context.Context
	durable bool
	fns     []writeFn
	errs    []error // per function, set by the leader
	done    chan struct{}
}

// groupWriter is the queue and the writer token.
type groupWriter struct {
	token chan struct{} // capacity 1: held by the caller running a group
	mu    sync.Mutex
	queue []*writeReq
	// commits and members count committed groups and the functions they
	// committed (WriteGroups).
	commits, members atomic.Int64
}

// WriteGroups reports the writer's committed transactions and the changes
// they carried since Open: members/commits is the grouping achieved.
func (s *Store) WriteGroups() (commits, members int64) {
	return s.group.commits.Load(), s.group.members.Load()
}

func newGroupWriter() *groupWriter { return &groupWriter{token: make(chan struct{}, 1)} }

// Savepoint statements, prepared with the hot set (stmt.go).
const (
	qSavepoint  = `SAVEPOINT ql3_member`
	qRollbackTo = `ROLLBACK TO ql3_member`
	qRelease    = `RELEASE ql3_member`
)

// writeBatch runs each of fns as one member of a group commit and returns
// their errors (nil where the member committed), in order. It returns only
// after the group's commit (or its failure).
func (s *Store) writeBatch(ctx context.Context, durable bool, fns []writeFn) []error {
	req := &writeReq{ctx: ctx, durable: durable, fns: fns, errs: make([]error, len(fns)), done: make(chan struct{})}
	if len(fns) == 0 {
		return req.errs
	}
	g := s.group
	g.mu.Lock()
	g.queue = append(g.queue, req)
	g.mu.Unlock()
	for {
		select {
		case <-req.done:
			return req.errs
		case g.token <- struct{}{}:
			// A previous leader closes done before it hands the token
			// back, so the request is either done or still queued.
			select {
			case <-req.done:
				<-g.token
				return req.errs
			default:
			}
			s.lead(g, req)
		}
	}
}

// lead runs one group as its leader and hands the token back, also when a
// member panics (the panic goes on after the group failed).
func (s *Store) lead(g *groupWriter, own *writeReq) {
	defer func() { <-g.token }()
	s.runGroup(g.take(), own)
}

// take removes up to maxGroupMembers functions' worth of requests from the
// head of the queue (always at least one request).
func (g *groupWriter) take() []*writeReq {
	g.mu.Lock()
	defer g.mu.Unlock()
	n, members := 0, 0
	for n < len(g.queue) && (n == 0 || members+len(g.queue[n].fns) <= maxGroupMembers) {
		members += len(g.queue[n].fns)
		n++
	}
	batch := g.queue[:n:n]
	g.queue = g.queue[n:]
	return batch
}

// runGroup runs batch in one transaction and closes every request's done.
func (s *Store) runGroup(batch []*writeReq, own *writeReq) {
	var (
		tx       *wtx
		finished bool
	)
	fail := func(err error) {
		err = translate(err)
		for _, r := range batch {
			for i := range r.errs {
				if r.errs[i] == nil {
					r.errs[i] = err
				}
			}
		}
	}
	defer func() {
		if !finished { // a member panicked: nothing of the group commits
			if tx != nil {
				_ = tx.Rollback()
			}
			fail(errs.E(errs.Internal, "", "store: a change of the same write group panicked"))
		}
		for _, r := range batch {
			close(r.done)
		}
	}()
	durable, members := false, 0
	for _, r := range batch {
		durable = durable || r.durable
		members += len(r.fns)
	}
	if durable && s.sync != "FULL" {
		if _, err := s.writer.ExecContext(context.Background(), "PRAGMA synchronous = FULL"); err != nil {
			finished = true
			fail(err)
			return
		}
		defer func() {
			// Staying on FULL would be safe, only slower.
			_, _ = s.writer.ExecContext(context.Background(), "PRAGMA synchronous = "+s.sync)
		}()
	}
	// The transaction outlives any one member's context: a member whose
	// context ended is skipped (or its statement fails) on its own.
	sqlTx, err := s.writer.BeginTx(context.Background(), nil)
	if err != nil {
		finished = true
		fail(err)
		return
	}
	tx = &wtx{Tx: sqlTx, stmts: s.stmts}
	finished = s.runMembers(tx, batch, own, members, fail)
}

// runMembers runs the group's functions in tx and commits; it reports
// false only when a function panicked (never returning).
func (s *Store) runMembers(tx *wtx, batch []*writeReq, own *writeReq, members int, fail func(error)) bool {
	var sg signals
	committed := 1
	if members == 1 {
		r := batch[0]
		if err := r.ctx.Err(); err != nil {
			_ = tx.Rollback()
			r.errs[0] = err
			return true
		}
		call := r.fns[0]
		if r != own { // another caller's panic must not unwind the leader
			call = func(tx *wtx, sg *signals) error { return callMember(r.fns[0], tx, sg) }
		}
		if err := call(tx, &sg); err != nil {
			_ = tx.Rollback()
			r.errs[0] = translate(err)
			return true
		}
	} else {
		committed = 0
		for _, r := range batch {
			for i, fn := range r.fns {
				memberErr, err := s.runMember(r.ctx, tx, fn, &sg)
				if err != nil { // the transaction itself is gone
					_ = tx.Rollback()
					fail(err)
					return true
				}
				if memberErr != nil {
					r.errs[i] = memberErr
				} else {
					committed++
				}
			}
		}
		if committed == 0 {
			_ = tx.Rollback()
			return true
		}
	}
	if err := tx.Commit(); err != nil {
		fail(err)
		return true
	}
	s.group.commits.Add(1)
	s.group.members.Add(int64(committed))
	s.send(sg)
	if tx.appended {
		s.appended.signal()
	}
	return true
}

// runMember runs fn inside a savepoint. memberErr is fn's own failure (its
// changes were rolled back to the savepoint, the group goes on); txErr
// means the transaction can no longer be used (SQLite rolled it back, e.g.
// on a full disk) and the whole group fails.
func (s *Store) runMember(ctx context.Context, tx *wtx, fn writeFn, sg *signals) (memberErr, txErr error) {
	if err := ctx.Err(); err != nil {
		return err, nil
	}
	bg := context.Background()
	if _, err := tx.ExecContext(bg, qSavepoint); err != nil {
		return nil, err
	}
	var own signals
	if err := callMember(fn, tx, &own); err != nil {
		if _, rerr := tx.ExecContext(bg, qRollbackTo); rerr != nil {
			return nil, errors.Join(err, rerr)
		}
		if _, rerr := tx.ExecContext(bg, qRelease); rerr != nil {
			return nil, errors.Join(err, rerr)
		}
		return translate(err), nil
	}
	if _, err := tx.ExecContext(bg, qRelease); err != nil {
		return nil, err
	}
	sg.runsReady = sg.runsReady || own.runsReady
	sg.cancelRequested = sg.cancelRequested || own.cancelRequested
	sg.schedulesChanged = sg.schedulesChanged || own.schedulesChanged
	return nil, nil
}

// callMember runs one member of a larger group; a panic becomes that
// member's error (errs.Internal, with the stack), so the other members'
// changes still commit.
func callMember(fn writeFn, tx *wtx, sg *signals) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = errs.E(errs.Internal, "", "store: a write panicked: %v\n%s", r, debug.Stack())
		}
	}()
	return fn(tx, sg)
}
