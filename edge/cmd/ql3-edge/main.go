// Command ql3-edge schedules and runs commands on one machine: `ql3-edge
// serve` is the server (scheduler, runner, HTTP API on 127.0.0.1:5700), every
// other subcommand is a client of its API. See `ql3-edge --help`.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	// Embedded IANA zone data: routers and minimal images often ship
	// without /usr/share/zoneinfo, and a trigger's zone must still resolve.
	_ "time/tzdata"

	"github.com/ql3/ql3/edge/cli"
)

// version is set at build time with -ldflags '-X main.version=...'.
var version = "dev"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Run(ctx, os.Args[1:], cli.StdEnv(version))
	stop()
	os.Exit(code)
}
