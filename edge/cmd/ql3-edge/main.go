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
	// The first SIGINT or SIGTERM cancels ctx (`serve` drains: running
	// attempts may finish for --drain-grace); the second closes stopNow
	// (`serve` stops them at once).
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	ctx, cancel := context.WithCancel(context.Background())
	stopNow := make(chan struct{})
	go func() {
		<-sigs
		cancel()
		<-sigs
		close(stopNow)
	}()
	env := cli.StdEnv(version)
	env.StopNow = stopNow
	code := cli.Run(ctx, os.Args[1:], env)
	signal.Stop(sigs)
	cancel()
	os.Exit(code)
}
