package app

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"sync"

	"github.com/ql3/ql3/controlplane/adminapi"
	"github.com/ql3/ql3/controlplane/notifyd"
	"github.com/ql3/ql3/controlplane/postgres"
	"github.com/ql3/ql3/controlplane/postgres/notifystore"
)

// notifyParts is the replica's notification deliverer (ADR 0053).
type notifyParts struct {
	stop func()
	kick func() // wakes the deliverer (a remote script's sendNotify was queued)
}

// startNotify loads the secret key file, opens the notify data key and
// starts this replica's deliverer on the runtime pool. Without
// --secret-key-file notifications are off and their routes answer 503.
func (m *Main) startNotify(ctx context.Context) (adminapi.NotifyPorts, error) {
	if m.Config.SecretKeyFile == "" {
		m.log.Info("notifications are off: no --secret-key-file")
		return adminapi.NotifyPorts{}, nil
	}
	// The env store's key file (envkeys.go): one file for every secret the
	// replicas seal, never created implicitly (two replicas each making
	// their own would lock each other out; `ql3-control env key-init`).
	kek, err := loadKeyFile(m.Config.SecretKeyFile)
	if err != nil {
		return adminapi.NotifyPorts{}, err
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
	m.notify.kick = d.Kick
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

// kickNotify wakes this replica's deliverer, when it runs.
func (m *Main) kickNotify() {
	m.mu.Lock()
	kick := m.notify.kick
	m.mu.Unlock()
	if kick != nil {
		kick()
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
