// Command fakeingress serves the worker module's fake ingress on loopback
// for scripts/bench/worker.sh: it writes a worker identity and an env file
// into -dir, queues the runs given with -run, and prints one line per
// answered request ("<unix ms> <path> <status> <bytes>") so the script can
// count heartbeats and time log uploads. Benchmarks only; not shipped.
package main

import (
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/ql3/ql3/worker/clock"
	"github.com/ql3/ql3/worker/internal/fakeingress"
)

type tb struct {
	dir     string
	mu      sync.Mutex
	cleanup []func()
}

func (t *tb) Helper()                           {}
func (t *tb) Fatal(args ...any)                 { log.Fatal(args...) }
func (t *tb) Errorf(format string, args ...any) { log.Printf(format, args...) }
func (t *tb) Cleanup(f func())                  { t.mu.Lock(); t.cleanup = append(t.cleanup, f); t.mu.Unlock() }
func (t *tb) TempDir() string {
	d, err := os.MkdirTemp(t.dir, "tmp")
	if err != nil {
		log.Fatal(err)
	}
	return d
}

type runs []string

func (r *runs) String() string     { return strings.Join(*r, ",") }
func (r *runs) Set(v string) error { *r = append(*r, v); return nil }

func main() {
	dir := flag.String("dir", "", "directory for the identity and the env file (required)")
	hb := flag.Int64("heartbeat-ms", 5000, "heartbeat interval the fake asks for")
	var rs runs
	flag.Var(&rs, "run", "id=shell script (repeatable)")
	flag.Parse()
	if *dir == "" {
		log.Fatal("-dir is required")
	}
	t := &tb{dir: *dir}
	pki := fakeingress.NewPKI(t, time.Now().Add(-time.Hour))
	srv := fakeingress.New(t, pki, clock.Real{})
	srv.HeartbeatMs = *hb
	var out sync.Mutex
	srv.Log = func(path string, status int, body []byte) {
		out.Lock()
		fmt.Printf("%d %s %d %d\n", time.Now().UnixMilli(), path, status, len(body))
		out.Unlock()
	}
	for _, r := range rs {
		id, script, ok := strings.Cut(r, "=")
		if !ok {
			log.Fatalf("-run %q: want id=script", r)
		}
		srv.AddRun(id, script, 3_600_000)
	}
	f := pki.WriteIdentity(t, fakeingress.Credential("bench"))
	env := fmt.Sprintf("QL3_INGRESS_URL=%s\nQL3_CREDENTIAL_FILE=%s\nQL3_CERT_FILE=%s\nQL3_KEY_FILE=%s\nQL3_CA_FILE=%s\n",
		srv.URL(), f.Credential, f.Cert, f.Key, f.CA)
	if err := os.WriteFile(filepath.Join(*dir, "env"), []byte(env), 0o600); err != nil {
		log.Fatal(err)
	}
	fmt.Fprintln(os.Stderr, "fakeingress: serving", srv.URL())
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	<-sig
	for i := len(t.cleanup) - 1; i >= 0; i-- {
		t.cleanup[i]()
	}
}
