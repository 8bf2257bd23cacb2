package app

import (
	"log/slog"

	"github.com/ql3/ql3/worker/agent"
	"github.com/ql3/ql3/worker/notifyrelay"
)

// startNotifyRelay opens the loopback listener scripts' sendNotify posts
// to (one per worker; each attempt gets its own token) and serves it while
// the process lives. Without it sendNotify only prints.
func startNotifyRelay(c notifyrelay.Poster, log *slog.Logger) agent.NotifyRelay {
	r, err := notifyrelay.Listen(c)
	if err != nil {
		log.Warn("sendNotify relay not started; scripts' notifications will only be printed", "err", err)
		return nil
	}
	go r.Serve()
	return r
}
