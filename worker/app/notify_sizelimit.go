//go:build mips || mipsle

package app

import (
	"log/slog"

	"github.com/ql3/ql3/worker/agent"
	"github.com/ql3/ql3/worker/notifyrelay"
)

// startNotifyRelay: the MIPS worker is at its hard size limit and does not
// link the relay (ADR 0053 has the figures); scripts' sendNotify there
// only prints.
func startNotifyRelay(notifyrelay.Poster, *slog.Logger) agent.NotifyRelay { return nil }
