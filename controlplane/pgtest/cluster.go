package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// superuser is the bootstrap superuser of every harness cluster.
const superuser = "postgres"

// serverSettings are passed on the postgres command line (never written to
// postgresql.conf, so a base-backup standby does not inherit the primary's
// port or socket). They trade durability for speed: these clusters live for
// one test process.
var serverSettings = []string{
	"listen_addresses=127.0.0.1",
	"unix_socket_permissions=0700",
	"fsync=off",
	"synchronous_commit=off",
	"shared_buffers=16MB",
	"max_connections=100",
	"autovacuum=off",
	"jit=off",
	"wal_level=replica",
	"max_wal_senders=4",
	"max_replication_slots=4",
	"wal_keep_size=128MB",
	"hot_standby=on",
	// A standby whose primary is gone retries WAL sources at this interval;
	// the 5 s default made every promotion after a crash take 5 s.
	"wal_retrieve_retry_interval=100ms",
	"checkpoint_timeout=30min",
	"max_wal_size=1GB",
	"log_min_messages=warning",
	"log_min_error_statement=panic",
	// Dynamic shared memory as files in the data directory, so a killed
	// server leaves nothing behind in /dev/shm once the directory is gone.
	"dynamic_shared_memory_type=mmap",
}

// pg_hba.conf: trust on the private socket (its directory is 0700 and owned
// by the server user), SCRAM over loopback TCP.
const hbaConf = `local all all trust
local replication all trust
host all all 127.0.0.1/32 scram-sha-256
host replication all 127.0.0.1/32 scram-sha-256
`

// Cluster is one running PostgreSQL server owned by the test process.
type Cluster struct {
	bin      string
	user     serverUser
	dir      string // temp root, removed by Stop
	dataDir  string
	sockDir  string
	port     int
	password string // of the superuser and the LOGIN ql3 roles (TCP only)

	cmd    *exec.Cmd
	exited chan struct{}

	stopOnce sync.Once
	stopErr  error

	tmplMu    sync.Mutex
	tmplReady bool
	tmplErr   error // sticky: every later NewDB reports the root cause
	adminMu   sync.Mutex
	admin     *pgx.Conn // superuser connection to db "postgres" for CREATE DATABASE
}

// lastStart records how long the last primary start took, for test logs and
// reports; tests never assert on it.
var lastStart struct {
	mu sync.Mutex
	d  time.Duration
}

func newClusterDir(bin string, u serverUser) (*Cluster, error) {
	reapStale()
	dir, err := os.MkdirTemp(baseDir(), "ql3pg-")
	if err != nil {
		return nil, err
	}
	c := &Cluster{bin: bin, user: u, dir: dir, dataDir: filepath.Join(dir, "data"), sockDir: filepath.Join(dir, "sock")}
	if err := os.WriteFile(filepath.Join(dir, "owner.pid"), []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		return nil, errors.Join(err, os.RemoveAll(dir))
	}
	if err := os.Mkdir(c.sockDir, 0o700); err != nil {
		return nil, errors.Join(err, os.RemoveAll(dir))
	}
	for _, p := range []string{dir, c.sockDir} {
		if err := u.chown(p); err != nil {
			return nil, errors.Join(err, os.RemoveAll(dir))
		}
	}
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	c.password = hex.EncodeToString(b)
	register(c)
	return c, nil
}

// startPrimary creates and starts a fresh primary cluster.
func startPrimary() (*Cluster, error) {
	t0 := time.Now()
	bin, err := FindBin()
	if err != nil {
		return nil, err
	}
	u, err := lookupServerUser()
	if err != nil {
		return nil, err
	}
	c, err := newClusterDir(bin, u)
	if err != nil {
		return nil, err
	}
	if err := initCluster(bin, u, c.dataDir); err != nil {
		return nil, errors.Join(err, c.Stop())
	}
	hba := filepath.Join(c.dataDir, "pg_hba.conf")
	if err := os.WriteFile(hba, []byte(hbaConf), 0o600); err != nil {
		return nil, errors.Join(err, c.Stop())
	}
	if err := u.chown(hba); err != nil {
		return nil, errors.Join(err, c.Stop())
	}
	if err := c.startServer(); err != nil {
		return nil, errors.Join(err, c.Stop())
	}
	if _, err := c.exec(context.Background(), "postgres", "ALTER ROLE "+superuser+" PASSWORD '"+c.password+"'"); err != nil {
		return nil, errors.Join(err, c.Stop())
	}
	lastStart.mu.Lock()
	lastStart.d = time.Since(t0)
	lastStart.mu.Unlock()
	return c, nil
}

// LastStartDuration is how long the most recent primary start took
// (initdb-from-cache, server start, readiness), for test logs.
func LastStartDuration() time.Duration {
	lastStart.mu.Lock()
	defer lastStart.mu.Unlock()
	return lastStart.d
}

// startServer launches postgres on a free port and waits until it accepts
// connections. A port taken between probing and binding is retried.
func (c *Cluster) startServer() error {
	var lastErr error
	for range 4 {
		port, err := freePort()
		if err != nil {
			return err
		}
		c.port = port
		err = c.launch()
		if err == nil {
			return nil
		}
		lastErr = err
		if !strings.Contains(err.Error(), "could not bind") && !strings.Contains(err.Error(), "could not create lock file") {
			return err
		}
	}
	return lastErr
}

func (c *Cluster) launch() error {
	logPath := filepath.Join(c.dir, "postgres.log")
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	defer logFile.Close() // the child holds its own descriptor
	args := []string{"-D", c.dataDir, "-p", strconv.Itoa(c.port), "-k", c.sockDir}
	for _, s := range serverSettings {
		args = append(args, "-c", s)
	}
	cmd := c.user.command(c.dir, filepath.Join(c.bin, "postgres"), args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("pgtest: start postgres: %w", err)
	}
	c.cmd = cmd
	c.exited = make(chan struct{})
	go func() { _ = cmd.Wait(); close(c.exited) }()
	return c.waitReady(60 * time.Second)
}

func (c *Cluster) waitReady(limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		select {
		case <-c.exited:
			return fmt.Errorf("pgtest: postgres exited during startup:\n%s", c.LogTail(4000))
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		conn, err := pgconn.Connect(ctx, c.DSN("postgres", superuser))
		cancel()
		if err == nil {
			_ = conn.Close(context.Background())
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("pgtest: postgres not ready after %v: %v\n%s", limit, err, c.LogTail(4000))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// LogTail returns up to n trailing bytes of the server log.
func (c *Cluster) LogTail(n int) string {
	b, err := os.ReadFile(filepath.Join(c.dir, "postgres.log"))
	if err != nil {
		return "(no server log: " + err.Error() + ")"
	}
	return tail(string(b), n)
}

// Port is the server's TCP port on 127.0.0.1 (also the socket's suffix).
func (c *Cluster) Port() int { return c.port }

// SocketDir is the directory holding the server's Unix socket.
func (c *Cluster) SocketDir() string { return c.sockDir }

// Password is the password of the superuser and the ql3 LOGIN roles, needed
// only for TCP connections (TCPDSN); socket connections are trusted.
func (c *Cluster) Password() string { return c.password }

// DSN is a key=value connection string to database db as user over the
// private Unix socket.
func (c *Cluster) DSN(db, user string) string {
	return fmt.Sprintf("host=%s port=%d user=%s dbname=%s sslmode=disable connect_timeout=10",
		quoteDSN(c.sockDir), c.port, quoteDSN(user), quoteDSN(db))
}

// TCPDSN is DSN over loopback TCP with SCRAM authentication, for tests that
// put a proxy between client and server.
func (c *Cluster) TCPDSN(db, user string) string {
	return fmt.Sprintf("host=127.0.0.1 port=%d user=%s password=%s dbname=%s sslmode=disable connect_timeout=10",
		c.port, quoteDSN(user), c.password, quoteDSN(db))
}

func quoteDSN(v string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(v) + "'"
}

// Connect opens a superuser connection to database db.
func (c *Cluster) Connect(ctx context.Context, db string) (*pgx.Conn, error) {
	return pgx.Connect(ctx, c.DSN(db, superuser))
}

func (c *Cluster) exec(ctx context.Context, db, sql string) (pgconn.CommandTag, error) {
	conn, err := c.Connect(ctx, db)
	if err != nil {
		return pgconn.CommandTag{}, err
	}
	defer conn.Close(ctx)
	return conn.Exec(ctx, sql)
}

// Stop shuts the server down (fast shutdown, SIGKILL after 10 s) and removes
// its directory. It is idempotent and safe after Kill.
func (c *Cluster) Stop() error {
	c.stopOnce.Do(func() {
		c.adminMu.Lock()
		if c.admin != nil {
			_ = c.admin.Close(context.Background())
			c.admin = nil
		}
		c.adminMu.Unlock()
		if c.cmd != nil {
			select {
			case <-c.exited:
			default:
				_ = c.cmd.Process.Signal(syscall.SIGINT)
				select {
				case <-c.exited:
				case <-time.After(10 * time.Second):
					_ = c.cmd.Process.Kill()
					<-c.exited
				}
			}
		}
		releaseKilledServer(c.dataDir)
		c.stopErr = os.RemoveAll(c.dir)
		unregister(c)
	})
	return c.stopErr
}

// Kill crashes the server (SIGKILL to the postmaster; its backends exit
// when they notice) without removing its files: for fault tests of a dead
// primary. Stop still cleans up afterwards.
func (c *Cluster) Kill() error {
	if c.cmd == nil {
		return errors.New("pgtest: cluster not running")
	}
	select {
	case <-c.exited:
		return nil
	default:
	}
	if err := c.cmd.Process.Kill(); err != nil {
		return err
	}
	<-c.exited
	return nil
}

// TerminateBackend ends the backend with process id pid
// (pg_terminate_backend) and waits up to 5 s for it to exit.
func (c *Cluster) TerminateBackend(ctx context.Context, pid uint32) error {
	conn, err := c.Connect(ctx, "postgres")
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	var ok bool
	if err := conn.QueryRow(ctx, "SELECT pg_terminate_backend($1, 5000)", int32(pid)).Scan(&ok); err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("pgtest: backend %d not terminated", pid)
	}
	return nil
}

// registry of live clusters, stopped by Main after the tests ran.
var live struct {
	mu sync.Mutex
	m  map[*Cluster]struct{}
}

func register(c *Cluster) {
	live.mu.Lock()
	defer live.mu.Unlock()
	if live.m == nil {
		live.m = map[*Cluster]struct{}{}
	}
	live.m[c] = struct{}{}
}

func unregister(c *Cluster) {
	live.mu.Lock()
	defer live.mu.Unlock()
	delete(live.m, c)
}

func stopAll() {
	live.mu.Lock()
	cs := make([]*Cluster, 0, len(live.m))
	for c := range live.m {
		cs = append(cs, c)
	}
	live.mu.Unlock()
	for _, c := range cs {
		if err := c.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "pgtest: stop cluster %s: %v\n", c.dir, err)
		}
	}
}

var reapOnce sync.Once

// reapStale removes harness directories left by test processes that died
// without cleanup (a panic, a -timeout abort, SIGKILL). Their servers were
// already killed by Pdeathsig.
func reapStale() {
	reapOnce.Do(func() {
		dirs, _ := filepath.Glob(filepath.Join(baseDir(), "ql3pg-*"))
		for _, d := range dirs {
			b, err := os.ReadFile(filepath.Join(d, "owner.pid"))
			if err != nil {
				continue // a cache dir, or one being created right now
			}
			pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
			if err != nil || pid <= 0 || pid == os.Getpid() {
				continue
			}
			if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
				releaseKilledServer(filepath.Join(d, "data"))
				_ = os.RemoveAll(d)
			}
		}
	})
}

// releaseKilledServer frees what a server that did not shut down cleanly
// (Kill, or the test process died) leaves outside its data directory: the
// System V interlock segment named in postmaster.pid (line 7: key, id). A
// cleanly stopped server has removed postmaster.pid itself. The postmaster
// is gone by now; IPC_RMID defers the removal until its last backend exits.
func releaseKilledServer(dataDir string) {
	b, err := os.ReadFile(filepath.Join(dataDir, "postmaster.pid"))
	if err != nil {
		return
	}
	lines := strings.Split(string(b), "\n")
	if len(lines) < 7 {
		return
	}
	fields := strings.Fields(lines[6])
	if len(fields) != 2 {
		return
	}
	if id, err := strconv.Atoi(fields[1]); err == nil && id >= 0 {
		_ = removeSysVSegment(id)
	}
}
