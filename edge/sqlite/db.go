// Package sqlite is ql3-edge's storage adapter: edge.Store on embedded
// SQLite (modernc.org/sqlite, pure Go).
//
// Concurrency model: one writer *sql.DB with a single connection whose
// transactions start with BEGIN IMMEDIATE (so a writer takes the lock up
// front instead of failing with SQLITE_BUSY on upgrade), and a separate
// read-only pool for reads. WAL lets readers proceed while the writer
// commits. busy_timeout covers a second process (the CLI, another
// scheduler in a test) holding the lock briefly.
//
// Durability on power loss (a router's normal way to stop): in WAL mode
// synchronous=NORMAL never corrupts the database, but the newest commits
// may roll back, and synchronous=FULL (an fsync per commit) prevents that.
// The rule here: a transaction that records an external fact commits with
// FULL; bookkeeping that can be recomputed commits with NORMAL.
//   - FULL: ClaimRun (before a process is spawned: rolled back, a run that
//     did execute would look never-started and run twice), FinishAttempt
//     (rolled back, a finished attempt would be recovered as lost and
//     maybe retried), and everything a user was told succeeded: task and
//     trigger publishes, run-now, cancel.
//   - NORMAL: scheduler admissions (the Run and the cursor advance roll back
//     together and the scheduler decides again; no duplicate, no hole
//     beyond the misfire policy), MarkAttemptRunning (a lost "running" is
//     recovered like a lost "starting"), log size updates.
//
// A FULL commit also makes every earlier NORMAL commit durable.
// Options.Synchronous = "FULL" makes every commit durable.
//
// Group commit (group.go, ADR 0065): writer transactions are queued and
// whoever holds the writer runs everything queued in one transaction, each
// change in its own savepoint, and commits once (FULL if any change needs
// it); a scheduler round submits its admissions as one batch. A change that
// fails is rolled back alone; no caller returns before the commit that
// holds its change. temp_store=MEMORY keeps the savepoints' sub-journal in
// memory (it holds one change's original pages at a time).
package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"time"

	"github.com/google/uuid"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/edge"
	"github.com/ql3/ql3/migrations"
	"github.com/ql3/ql3/worker/clock"
)

var _ edge.Store = (*Store)(nil)

// Options configure Open. Zero values take the defaults.
type Options struct {
	// Clock stamps created/updated times of publishing operations; runner
	// and scheduler methods take their time as a parameter. Default: real.
	Clock clock.Clock
	// BusyTimeoutMs is SQLite's busy_timeout. Default 5000.
	BusyTimeoutMs int
	// Synchronous is the writer's default synchronous mode: "NORMAL"
	// (default) or "FULL". ClaimRun always commits with FULL.
	Synchronous string
	// ReadConns bounds the reader pool. Default 2: the readers are the
	// API and the runner's listing; each open one holds its own page cache.
	ReadConns int
	// Migrations replaces the embedded migrations (tests only).
	Migrations []migrations.Migration
}

// Store implements edge.Store.
type Store struct {
	writer *sql.DB
	reader *sql.DB
	clock  clock.Clock
	sync   string

	// group serialises writer transactions inside this process and
	// commits concurrent changes together (group.go), so that ClaimRun's
	// synchronous switch cannot interleave with another transaction on the
	// single writer connection.
	group *groupWriter

	stmts map[string]*sql.Stmt // prepared on writer; see wtx

	env envKeys // the env store's data key once unlocked (envs.go)

	runsReady        chan struct{}
	cancelRequested  chan struct{}
	schedulesChanged chan struct{}
	appended         *broadcast // the feed's wake-up: closed after each commit that appended run events
}

// Open opens (creating if needed) the database at path, applies pending
// migrations and returns the store. A database with a newer schema or a
// tampered migration is refused.
func Open(ctx context.Context, path string, opt Options) (*Store, error) {
	if opt.Clock == nil {
		opt.Clock = clock.Real{}
	}
	if opt.BusyTimeoutMs <= 0 {
		opt.BusyTimeoutMs = 5000
	}
	switch strings.ToUpper(opt.Synchronous) {
	case "":
		opt.Synchronous = "NORMAL"
	case "NORMAL", "FULL":
		opt.Synchronous = strings.ToUpper(opt.Synchronous)
	default:
		return nil, errs.Invalidf("synchronous", "must be NORMAL or FULL, got %q", opt.Synchronous)
	}
	if opt.ReadConns <= 0 {
		opt.ReadConns = 2
	}
	embedded := opt.Migrations == nil
	if embedded {
		opt.Migrations = migrations.SQLite()
	}
	if path == "" || strings.ContainsAny(path, "?#") {
		return nil, errs.Invalidf("path", "database path must be a plain file path, got %q", path)
	}

	common := []string{
		fmt.Sprintf("busy_timeout(%d)", opt.BusyTimeoutMs),
		"foreign_keys(1)",
	}
	// journal_size_limit truncates the WAL after a checkpoint so a burst
	// does not leave a large file behind on small flash storage. The
	// writer's page cache is 512 KiB (SQLite's default is 2 MiB): the hot
	// set of admission (schedules, the run and attempt indexes) fits, and
	// the operating system's page cache holds the rest of the file anyway.
	writerDSN := dsn(path, append(common, "journal_mode(WAL)", "synchronous("+opt.Synchronous+")",
		"journal_size_limit(8388608)", "cache_size(-512)", "temp_store(MEMORY)"), "immediate", "rwc")
	writer, err := sql.Open("sqlite", writerDSN)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	writer.SetMaxOpenConns(1)
	writer.SetMaxIdleConns(1)
	writer.SetConnMaxLifetime(0)
	writer.SetConnMaxIdleTime(0)
	if err := writer.PingContext(ctx); err != nil {
		writer.Close()
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	if err := migrate(ctx, writer, opt.Migrations, opt.Clock.Now().UnixMilli()); err != nil {
		writer.Close()
		return nil, err
	}
	// Custom migrations (tests of the migration runner) have other tables,
	// so only the embedded schema gets the prepared hot statements.
	var stmts map[string]*sql.Stmt
	if embedded {
		if stmts, err = prepareAll(ctx, writer, hotStatements()); err != nil {
			writer.Close()
			return nil, err
		}
	}
	// Readers get a 256 KiB page cache each (SQLite's default is 2 MiB)
	// and are closed after a minute idle: memory matters more than read
	// speed on a router, the data set is small and the operating system
	// caches the file.
	reader, err := sql.Open("sqlite", dsn(path, append(common, "query_only(1)", "cache_size(-256)"), "deferred", "ro"))
	if err != nil {
		writer.Close()
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	reader.SetMaxOpenConns(opt.ReadConns)
	reader.SetMaxIdleConns(opt.ReadConns)
	reader.SetConnMaxIdleTime(time.Minute)
	if err := reader.PingContext(ctx); err != nil {
		writer.Close()
		reader.Close()
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	return &Store{
		writer:           writer,
		reader:           reader,
		clock:            opt.Clock,
		sync:             opt.Synchronous,
		stmts:            stmts,
		group:            newGroupWriter(),
		runsReady:        make(chan struct{}, 1),
		cancelRequested:  make(chan struct{}, 1),
		schedulesChanged: make(chan struct{}, 1),
		appended:         newBroadcast(),
	}, nil
}

func dsn(path string, pragmas []string, txlock, mode string) string {
	q := url.Values{}
	for _, p := range pragmas {
		q.Add("_pragma", p)
	}
	q.Set("_txlock", txlock)
	q.Set("mode", mode)
	return "file:" + path + "?" + q.Encode()
}

// Close closes both pools.
func (s *Store) Close() error {
	for _, st := range s.stmts {
		st.Close()
	}
	return errors.Join(s.reader.Close(), s.writer.Close())
}

// RunsReady implements edge.Signals.
func (s *Store) RunsReady() <-chan struct{} { return s.runsReady }

// CancelRequested implements edge.Signals.
func (s *Store) CancelRequested() <-chan struct{} { return s.cancelRequested }

// SchedulesChanged implements edge.Signals.
func (s *Store) SchedulesChanged() <-chan struct{} { return s.schedulesChanged }

func notify(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// signals collects the notifications of one transaction; they are sent
// only after it committed.
type signals struct {
	runsReady, cancelRequested, schedulesChanged bool
}

func (s *Store) send(sg signals) {
	if sg.runsReady {
		notify(s.runsReady)
	}
	if sg.cancelRequested {
		notify(s.cancelRequested)
	}
	if sg.schedulesChanged {
		notify(s.schedulesChanged)
	}
}

// write runs fn in one BEGIN IMMEDIATE transaction on the writer and sends
// the collected signals after commit. The commit has the writer's default
// durability (NORMAL unless configured FULL).
func (s *Store) write(ctx context.Context, fn func(tx *wtx, sg *signals) error) error {
	return s.writeSync(ctx, false, fn)
}

// writeDurable is write with a synchronous=FULL commit: used for every
// transaction that records an external fact (see the package doc).
func (s *Store) writeDurable(ctx context.Context, fn func(tx *wtx, sg *signals) error) error {
	return s.writeSync(ctx, true, fn)
}

// writeSync is write; durable=true commits with synchronous=FULL. The
// change joins a group commit (group.go): it may share its transaction
// with other callers' changes, and it returns after that commit. Not
// inlined: one copy instead of one per call site (binary size).
//
//go:noinline
func (s *Store) writeSync(ctx context.Context, durable bool, fn func(tx *wtx, sg *signals) error) error {
	return s.writeBatch(ctx, durable, []writeFn{fn})[0]
}

// translate maps driver errors to coded errors at the adapter edge; coded
// errors pass through.
func translate(err error) error {
	if err == nil {
		return nil
	}
	var coded *errs.Error
	if errors.As(err, &coded) {
		return err
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	var se *sqlite.Error
	if errors.As(err, &se) {
		switch se.Code() {
		case sqlite3.SQLITE_CONSTRAINT_UNIQUE, sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY:
			return errs.E(errs.Conflict, "", "already exists: %v", se)
		case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED, sqlite3.SQLITE_BUSY_SNAPSHOT:
			return errs.E(errs.Unavailable, "", "database is busy: %v", se)
		case sqlite3.SQLITE_FULL:
			return errs.E(errs.Unavailable, "", "disk is full: %v", se)
		}
	}
	return errs.E(errs.Internal, "", "sqlite: %v", err)
}

func newID() string {
	id, err := uuid.NewV7()
	if err != nil {
		// NewV7 fails only if the system random source fails.
		panic(fmt.Sprintf("uuid: %v", err))
	}
	return id.String()
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
