package app

import (
	"context"
	"net"
	"path/filepath"
	"strconv"

	"github.com/ql3/ql3/edge"
	"github.com/ql3/ql3/edge/httpapi"
	"github.com/ql3/ql3/edge/notify"
	"github.com/ql3/ql3/edge/runner"
)

// notifyParts are the notifications of one server process (ADR 0046).
type notifyParts struct {
	deliverer *notify.Deliverer
	tokens    *notify.Tokens
	url       string // QL3_NOTIFY_URL
}

// newNotify builds the deliverer and the per-Run token key, and ships the
// sendNotify modules into the scripts folder.
func (m *Main) newNotify() (*notifyParts, error) {
	d, err := notify.New(notify.Config{Store: m.store, Feed: m.store, Runs: m.store, Clock: m.Clock,
		Logger: m.log.With("component", "notify")})
	if err != nil {
		return nil, err
	}
	tokens, err := notify.NewTokens()
	if err != nil {
		return nil, err
	}
	if err := notify.WriteModules(filepath.Join(m.Config.DataDir, ScriptsDirName)); err != nil {
		return nil, err
	}
	return &notifyParts{deliverer: d, tokens: tokens, url: m.scheme() + "://" + loopbackAddr(m.listener.Addr()) + notify.SendPath}, nil
}

// loopbackAddr is how a process on this machine reaches the API: an
// unspecified listen address (0.0.0.0, ::) is reached on loopback.
func loopbackAddr(a net.Addr) string {
	tcp, ok := a.(*net.TCPAddr)
	if !ok {
		return a.String()
	}
	host := tcp.IP.String()
	switch {
	case tcp.IP.IsUnspecified() && tcp.IP.To4() != nil:
		host = "127.0.0.1"
	case tcp.IP.IsUnspecified():
		host = "::1"
	}
	return net.JoinHostPort(host, strconv.Itoa(tcp.Port))
}

// attemptEnv gives each attempt sendNotify's URL and its Run's token.
func (n *notifyParts) attemptEnv() runner.AttemptEnvFunc {
	return func(c edge.Claim) map[string]string {
		return map[string]string{notify.EnvURL: n.url, notify.EnvToken: n.tokens.Issue(c.Run.ID)}
	}
}

func (n *notifyParts) api(store notify.Store) *httpapi.NotifyConfig {
	return &httpapi.NotifyConfig{Store: store, Deliverer: n.deliverer, Tokens: n.tokens}
}

// run delivers until ctx ends.
func (n *notifyParts) run(ctx context.Context) error { return n.deliverer.Run(ctx) }

// pruneNotify removes finished deliveries older than the run retention,
// in bounded batches (called by the hourly retention sweep).
func (m *Main) pruneNotify(ctx context.Context, cutoffMs int64) {
	total := 0
	for range maxPruneBatchesPerSweep {
		n, err := m.store.PruneDeliveries(ctx, cutoffMs, edge.MaxPruneBatch)
		if err != nil {
			m.log.Warn("notification retention sweep failed", "err", err)
			return
		}
		total += n
		if n < edge.MaxPruneBatch {
			break
		}
	}
	if total > 0 {
		m.log.Info("notification retention", "removedDeliveries", total)
	}
}
