package ingress_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/ql3/ql3/controlplane"
	"github.com/ql3/ql3/controlplane/ingress"
	"github.com/ql3/ql3/controlplane/internal/devpki"
	"github.com/ql3/ql3/controlplane/pgtest"
	"github.com/ql3/ql3/controlplane/postgres"
	"github.com/ql3/ql3/controlplane/postgres/dispatch"
	"github.com/ql3/ql3/controlplane/postgres/publication"
	"github.com/ql3/ql3/controlplane/postgres/pullpace"
	"github.com/ql3/ql3/controlplane/postgres/session"
	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/placement"
	"github.com/ql3/ql3/core/protocol"
	"github.com/ql3/ql3/scripts/testio"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// env is one test's ingress: real PostgreSQL (its own database), the real
// session store and authenticator on a ql3_worker_ingress pool, a dev PKI,
// and the real mTLS listener on 127.0.0.1.
type env struct {
	t      testing.TB
	db     *pgtest.DB
	pub    *publication.Publisher
	srv    *ingress.Server
	ca     *devpki.CA
	dir    string
	files  ingress.TLSFiles
	log    *testio.Buffer
	leases *fakeLeases
	pacer  *pullpace.PullPacer
	now    time.Time
	clock  *manualClock // the principal cache's clock

	crlNumber int64
	srvCA     *devpki.CA

	respMu    sync.Mutex
	responses []response // every answer, for the leak check
}

type envOptions struct {
	requestTimeout time.Duration
	noLeases       bool // no dispatcher wired in
	dispatch       bool // the real dispatcher (dispatch.Dispatcher on a runtime pool) instead of fakeLeases
	crl            bool // start with a CRL file (of the client CA, revoking nothing)
	handshake      time.Duration
	reloadTicks    chan time.Time
	maxInFlight    int
	authCacheTTL   time.Duration // > 0: the authenticator behind a PrincipalCache on e.clock
	idleRetry      time.Duration // the real dispatcher's idle pause (0: its default)
	pace           bool          // a pullpace.PullPacer on a runtime pool, on e.clock (e.pacer)
	notify         controlplane.ScriptNotify
}

// manualClock is a clock tests move by hand.
type manualClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *manualClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *manualClock) advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func newEnv(t testing.TB, opts envOptions) *env {
	t.Helper()
	db := pgtest.NewDB(t)
	admin := db.Pool(t, postgres.RoleAdmin)
	ing := db.Pool(t, postgres.RoleWorkerIngress)
	sessions, err := session.NewSessions(ing, session.SessionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	ca, err := devpki.NewCA("ql3 test workers", devpki.For(now, 24*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	serverCA, err := devpki.NewCA("ql3 test server", devpki.For(now, 24*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	server, err := serverCA.IssueServer(devpki.Leaf{CommonName: "ingress", Hosts: []string{"127.0.0.1", "localhost"}, Validity: devpki.For(now, time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certPath, keyPath, err := server.WriteFiles(dir, "server")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "server-ca.pem"), serverCA.CertPEM(), 0o644); err != nil {
		t.Fatal(err)
	}
	caPath := filepath.Join(dir, "clients.pem")
	if err := devpki.WriteFileAtomic(caPath, ca.CertPEM(), 0o644); err != nil {
		t.Fatal(err)
	}
	files := ingress.TLSFiles{CertFile: certPath, KeyFile: keyPath, ClientCAFile: caPath}
	if opts.crl {
		files.CRLFile = filepath.Join(dir, "clients.crl")
		crl, err := ca.CRL(1, now.Add(-time.Minute), now.Add(time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		if err := devpki.WriteFileAtomic(files.CRLFile, crl, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	logs := &testio.Buffer{}
	workerAuth := session.NewWorkerAuth(ing)
	clock := &manualClock{t: now}
	auth := ingress.NewPrincipalCache(workerAuth, opts.authCacheTTL, clock.now)
	e := &env{t: t, db: db, pub: publication.NewPublisher(admin, publication.PublisherOptions{}), ca: ca, dir: dir, log: logs,
		leases: &fakeLeases{}, now: now, clock: clock, files: files, crlNumber: 1, srvCA: serverCA}
	var leases controlplane.LeasePort
	switch {
	case opts.dispatch:
		d, err := dispatch.NewDispatcher(db.Pool(t, postgres.RoleRuntime), dispatch.DispatchOptions{IdleRetryAfter: opts.idleRetry})
		if err != nil {
			t.Fatal(err)
		}
		leases = d
	case !opts.noLeases:
		leases = e.leases
	}
	var pacer controlplane.PullPacer
	if opts.pace {
		// A TTL the manual clock never reaches: the test refreshes it.
		e.pacer, err = pullpace.NewPullPacer(db.Pool(t, postgres.RoleRuntime), pullpace.PullPacerOptions{TTL: 5 * time.Second, Now: clock.now})
		if err != nil {
			t.Fatal(err)
		}
		pacer = e.pacer
	}
	e.srv, err = ingress.New(ingress.Config{TLS: e.files, Sessions: sessions, Leases: leases, Pacer: pacer, Auth: auth, Audit: workerAuth,
		Logger:         slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		RequestTimeout: opts.requestTimeout, ReloadInterval: -1, ReloadTicks: opts.reloadTicks,
		HandshakeTimeout: opts.handshake, MaxInFlight: opts.maxInFlight, Notify: opts.notify})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if err := e.srv.StartListener(ln); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = e.srv.Shutdown(ctx)
	})
	return e
}

// worker is a registered worker with a client certificate and credential.
type worker struct {
	id, identity, cred, credID string
	cert                       tls.Certificate
}

func (e *env) worker(name string) *worker {
	e.t.Helper()
	ctx := context.Background()
	identity := "spiffe://ql3/worker/" + name
	rec, err := e.pub.RegisterWorker(ctx, controlplane.WorkerInput{Name: name, TLSIdentity: identity})
	if err != nil {
		e.t.Fatal(err)
	}
	c, text, err := e.pub.IssueWorkerCredential(ctx, rec.ID)
	if err != nil {
		e.t.Fatal(err)
	}
	pair, err := e.ca.IssueClient(devpki.Leaf{CommonName: name, URIs: []string{identity}, Validity: devpki.For(e.now, time.Hour)})
	if err != nil {
		e.t.Fatal(err)
	}
	return &worker{id: rec.ID, identity: identity, cred: text, credID: c.ID, cert: pair.TLS()}
}

// client is a worker-side HTTPS client: TLS 1.3, its certificate, no
// session cache; it waits for 100-continue before sending a body, so a
// body the server never asks for is never sent.
func (e *env) client(certs ...tls.Certificate) *http.Client {
	return e.clientWith(&tls.Config{MinVersion: tls.VersionTLS13, Certificates: certs})
}

func (e *env) clientWith(cfg *tls.Config) *http.Client {
	e.t.Helper()
	pem, err := os.ReadFile(filepath.Join(e.dir, "server-ca.pem"))
	if err != nil {
		e.t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(pem)
	cfg.RootCAs, cfg.ServerName = roots, "localhost"
	tr := &http.Transport{TLSClientConfig: cfg, ExpectContinueTimeout: 30 * time.Second, ForceAttemptHTTP2: false}
	e.t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 30 * time.Second}
}

func (e *env) url(path string) string { return "https://" + e.srv.Addr() + path }

// watchedBody records whether anyone read it.
type watchedBody struct {
	r    io.Reader
	read *atomic.Bool
}

func (w watchedBody) Read(p []byte) (int, error) {
	w.read.Store(true)
	return w.r.Read(p)
}

// response is one answer, kept whole for the leak check.
type response struct {
	status int
	header http.Header
	body   []byte
}

// post sends body to path with credential cred ("" = no Authorization).
// bodyRead reports whether the server asked for the body.
func (e *env) post(c *http.Client, path, cred string, body []byte) (resp response, bodyRead bool, err error) {
	var read atomic.Bool
	req, err := http.NewRequest(http.MethodPost, e.url(path), watchedBody{r: bytes.NewReader(body), read: &read})
	if err != nil {
		return response{}, false, err
	}
	req.ContentLength = int64(len(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Expect", "100-continue")
	if cred != "" {
		req.Header.Set("Authorization", "Worker "+cred)
	}
	r, err := c.Do(req)
	if err != nil {
		return response{}, read.Load(), err
	}
	defer r.Body.Close()
	data, err := io.ReadAll(r.Body)
	resp = response{status: r.StatusCode, header: r.Header, body: data}
	e.respMu.Lock()
	e.responses = append(e.responses, resp)
	e.respMu.Unlock()
	return resp, read.Load(), err
}

// must posts and requires status want; it returns the body.
func (e *env) must(c *http.Client, path, cred string, body []byte, want int) []byte {
	e.t.Helper()
	r, _, err := e.post(c, path, cred, body)
	if err != nil {
		e.t.Fatalf("%s: %v", path, err)
	}
	if r.status != want {
		e.t.Fatalf("%s: status %d, want %d: %s", path, r.status, want, r.body)
	}
	return r.body
}

func errCode(t testing.TB, body []byte) errs.Body {
	t.Helper()
	var b errs.Body
	if err := json.Unmarshal(body, &b); err != nil {
		t.Fatalf("error body %q: %v", body, err)
	}
	return b
}

func testCaps() placement.Capabilities {
	return placement.Capabilities{OS: "linux", Arch: "amd64", Executors: []string{"argv", "shell"}}.Normalize()
}

func openBody(t testing.TB, credID string) []byte {
	t.Helper()
	raw, err := protocol.SessionOpen{AgentVersion: "ql3-worker/test", CredentialID: credID, Capacity: 2, Capabilities: testCaps()}.Encode()
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

func heartbeatBody(t testing.TB, st protocol.SessionState, credID string, attempts ...string) []byte {
	t.Helper()
	d, err := testCaps().Digest()
	if err != nil {
		t.Fatal(err)
	}
	raw, err := protocol.SessionHeartbeat{SessionID: st.SessionID, Generation: st.Generation, CapabilitiesDigest: d,
		CredentialID: credID, RunningAttemptIDs: attempts}.Encode()
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

func transitionBody(t testing.TB, st protocol.SessionState, to protocol.SessionStatus) []byte {
	t.Helper()
	raw, err := protocol.SessionTransition{SessionID: st.SessionID, Generation: st.Generation, To: to}.Encode()
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

func state(t testing.TB, body []byte) protocol.SessionState {
	t.Helper()
	st, err := protocol.DecodeSessionState(body)
	if err != nil {
		t.Fatalf("session state %s: %v", body, err)
	}
	return st
}

// open opens a session over HTTPS.
func (e *env) open(c *http.Client, w *worker) protocol.SessionState {
	e.t.Helper()
	return state(e.t, e.must(c, protocol.PathSessionOpen, w.cred, openBody(e.t, w.credID), http.StatusOK))
}

// denials returns the reasons of the audit_log denial lines, oldest first.
func (e *env) denials() []string {
	e.t.Helper()
	rows, err := e.db.Conn(e.t).Query(context.Background(), `SELECT details->>'reason' FROM ql3.audit_log WHERE outcome = 'denied' ORDER BY at_ms, audit_id`)
	if err != nil {
		e.t.Fatal(err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		e.t.Fatal(err)
	}
	return out
}

// sessionRows dumps every session row (for "nothing changed").
func (e *env) sessionRows() string {
	e.t.Helper()
	var out string
	if err := e.db.Conn(e.t).QueryRow(context.Background(), `SELECT coalesce(string_agg(s::text, E'\n' ORDER BY session_id), '') FROM ql3.worker_sessions s`).Scan(&out); err != nil {
		e.t.Fatal(err)
	}
	return out
}

// fakeLeases is a LeasePort for the session tests until the dispatcher is
// wired in: it extends the attempts of live sessions it was told about
// and revokes everything else, recording what it was asked.
type fakeLeases struct {
	mu    sync.Mutex
	calls [][]string
	fail  error
}

func (f *fakeLeases) Pull(ctx context.Context, p controlplane.Principal, req protocol.OfferPullRequest) (*protocol.Offer, time.Duration, error) {
	return nil, 2500 * time.Millisecond, nil
}

func (f *fakeLeases) Ack(context.Context, controlplane.Principal, protocol.Ack) (protocol.LeaseControl, error) {
	return protocol.LeaseControl{}, errs.Conflictf("no such lease")
}

func (f *fakeLeases) Log(context.Context, controlplane.Principal, protocol.LogChunk) (protocol.LogReceipt, error) {
	return protocol.LogReceipt{}, errs.Conflictf("no such lease")
}

func (f *fakeLeases) Complete(context.Context, controlplane.Principal, protocol.Completion) (protocol.CompletionReceipt, error) {
	return protocol.CompletionReceipt{}, errs.Conflictf("no such lease")
}

func (f *fakeLeases) RenewForHeartbeat(ctx context.Context, p controlplane.Principal, sessionID string, generation int64, ids []string) ([]protocol.LeaseControl, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail != nil {
		return nil, f.fail
	}
	f.calls = append(f.calls, append([]string{sessionID}, ids...))
	out := make([]protocol.LeaseControl, len(ids))
	for i, id := range ids {
		out[i] = protocol.LeaseControl{RunID: "run-" + id, AttemptID: id, LeaseGeneration: 1, LeaseVersion: 2,
			Action: protocol.LeaseExtend, LeaseExpiresAtMs: 1}
	}
	return out, nil
}

func mustUUID(t testing.TB, s string) uuid.UUID {
	t.Helper()
	id, err := uuid.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// dumpAll is the text of every row of every table in schema ql3, as the
// superuser sees it (bytea as hex).
func (e *env) dumpAll() string {
	e.t.Helper()
	ctx := context.Background()
	conn := e.db.Conn(e.t)
	rows, err := conn.Query(ctx, `SELECT c.relname FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = 'ql3' AND c.relkind = 'r' ORDER BY 1`)
	if err != nil {
		e.t.Fatal(err)
	}
	tables, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil || len(tables) < 10 {
		e.t.Fatalf("tables: %v %v", tables, err)
	}
	var b strings.Builder
	for _, tbl := range tables {
		var text string
		if err := conn.QueryRow(ctx, `SELECT coalesce(string_agg(t::text, E'\n'), '') FROM ql3.`+pgx.Identifier{tbl}.Sanitize()+` t`).Scan(&text); err != nil {
			e.t.Fatal(err)
		}
		b.WriteString(tbl + ":\n" + text + "\n")
	}
	return b.String()
}

// everything is every response (headers and body) so far.
func (e *env) everything() string {
	e.respMu.Lock()
	defer e.respMu.Unlock()
	var b strings.Builder
	for _, r := range e.responses {
		fmt.Fprintf(&b, "%d %v %s\n", r.status, r.header, r.body)
	}
	return b.String()
}

func (e *env) serverCA(t testing.TB) *devpki.CA { return e.srvCA }
