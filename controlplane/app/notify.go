package app

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"

	"github.com/ql3/ql3/controlplane/adminapi"
	"github.com/ql3/ql3/controlplane/notifyd"
	"github.com/ql3/ql3/controlplane/postgres"
	"github.com/ql3/ql3/controlplane/postgres/notifystore"
	"github.com/ql3/ql3/core/envseal"
	"github.com/ql3/ql3/core/errs"
)

// notifyParts is the replica's notification deliverer (ADR 0053).
type notifyParts struct {
	stop func()
}

// startNotify loads the secret key file, opens the notify data key and
// starts this replica's deliverer on the runtime pool. Without
// --secret-key-file notifications are off and their routes answer 503.
func (m *Main) startNotify(ctx context.Context) (adminapi.NotifyPorts, error) {
	if m.Config.SecretKeyFile == "" {
		m.log.Info("notifications are off: no --secret-key-file")
		return adminapi.NotifyPorts{}, nil
	}
	kek, created, err := loadSecretKeyFile(m.Config.SecretKeyFile)
	if err != nil {
		return adminapi.NotifyPorts{}, err
	}
	if created {
		m.log.Warn("created the secret key file: copy it (mode 0600) to every replica before starting them", "path", m.Config.SecretKeyFile)
	}
	if _, err := m.runOps(ctx); err != nil { // opens or shares the runtime pool
		return adminapi.NotifyPorts{}, err
	}
	m.mu.Lock()
	pool := m.runtimePool
	admin := m.adminPool
	m.mu.Unlock()
	c, err := notifystore.OpenCipher(ctx, pool, kek)
	if err != nil {
		return adminapi.NotifyPorts{}, fmt.Errorf("notifications: %w", err)
	}
	owner, err := replicaOwner()
	if err != nil {
		return adminapi.NotifyPorts{}, err
	}
	d, err := notifyd.New(notifyd.Config{Feed: postgres.NewFeed(pool), Consumers: postgres.NewFeed(pool),
		Outbox: notifystore.NewOutbox(pool, c), Owner: owner, Logger: m.log})
	if err != nil {
		return adminapi.NotifyPorts{}, err
	}
	rctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = d.Run(rctx) })
	m.mu.Lock()
	m.notify.stop = func() { cancel(); wg.Wait() }
	m.mu.Unlock()
	m.log.Info("notification deliverer started", "owner", owner)
	return adminapi.NotifyPorts{Config: notifystore.NewConfig(admin, c), Tester: d}, nil
}

// stopNotify ends the deliverer (an attempt in flight is cut off; its
// claim lapses and another replica retries it).
func (m *Main) stopNotify() {
	m.mu.Lock()
	stop := m.notify.stop
	m.notify.stop = nil
	m.mu.Unlock()
	if stop != nil {
		stop()
	}
}

func replicaOwner() (string, error) {
	host, _ := os.Hostname()
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	if len(host) > 64 {
		host = host[:64]
	}
	return fmt.Sprintf("%s/%d/%s", host, os.Getpid(), hex.EncodeToString(b[:])), nil
}

// maxKeyFile bounds a key file's size.
const maxKeyFile = 256

// loadSecretKeyFile reads the key-encryption key that seals notification
// channel credentials (envseal's one-line format). The file must be a
// regular file, not a symlink, readable by its owner only; a missing file
// is created (O_EXCL, 0600) with a fresh key, and created says so.
func loadSecretKeyFile(path string) (kek envseal.KEK, created bool, err error) {
	if !filepath.IsAbs(path) {
		return kek, false, errs.Invalidf("secret-key-file", "must be an absolute path, got %q", path)
	}
	f, err := os.OpenFile(path, os.O_RDONLY|noFollow, 0)
	if errors.Is(err, os.ErrNotExist) {
		if kek, err = envseal.NewKEK(); err != nil {
			return kek, false, err
		}
		nf, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|noFollow, 0o600)
		if err != nil {
			return kek, false, errs.Invalidf("secret-key-file", "cannot create %s: %v", path, err)
		}
		_, werr := io.WriteString(nf, kek.Text()+"\n")
		serr := nf.Sync()
		if cerr := nf.Close(); werr == nil && serr == nil && cerr != nil {
			werr = cerr
		}
		if err := errors.Join(werr, serr); err != nil {
			return kek, false, errs.Invalidf("secret-key-file", "cannot write %s: %v", path, err)
		}
		return kek, true, nil
	}
	if err != nil {
		return kek, false, errs.Invalidf("secret-key-file", "%s cannot be opened: %v", path, err)
	}
	defer f.Close()
	st, err := f.Stat()
	switch {
	case err != nil:
		return kek, false, errs.Invalidf("secret-key-file", "%s cannot be read: %v", path, err)
	case !st.Mode().IsRegular():
		return kek, false, errs.Invalidf("secret-key-file", "%s is not a regular file", path)
	case st.Mode().Perm()&0o077 != 0:
		return kek, false, errs.Invalidf("secret-key-file", "%s is readable or writable by group or others (mode %04o); run chmod 600 on it", path, st.Mode().Perm())
	}
	raw, err := io.ReadAll(io.LimitReader(f, maxKeyFile+1))
	if err != nil {
		return kek, false, errs.Invalidf("secret-key-file", "%s cannot be read: %v", path, err)
	}
	if len(raw) > maxKeyFile {
		return kek, false, errs.Invalidf("secret-key-file", "%s is larger than %d bytes; it is not a key file", path, maxKeyFile)
	}
	if kek, err = envseal.ParseKEK(string(raw)); err != nil {
		return kek, false, errs.Invalidf("secret-key-file", "%s is not usable: %v", path, err)
	}
	return kek, false, nil
}
