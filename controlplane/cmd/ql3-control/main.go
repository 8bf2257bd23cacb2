// Command ql3-control is the cluster control plane: migrations, the admin
// API and its command-line client. All the work is in package app; main
// only wires it to the process: arguments, signals, exit status.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	// Trigger zones are validated and evaluated with the IANA database;
	// embedding it means every replica of one build agrees on every zone,
	// whatever the host has installed.
	_ "time/tzdata"

	"github.com/ql3/ql3/controlplane/app"
	"github.com/ql3/ql3/core/errs"
)

var version = "dev"

func main() {
	os.Exit(run())
}

func run() int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	m := app.NewMain()
	m.Version = version
	if err := m.ParseFlags(os.Args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return app.ExitOK
		}
		fmt.Fprintf(os.Stderr, "ql3-control: %v\n", err)
		return app.ExitUsage
	}
	if err := m.Run(ctx); err != nil {
		_ = m.Close()
		if errors.Is(err, app.ErrRunSkipped) {
			return app.ExitRunSkipped // the result line said it
		}
		fmt.Fprintf(os.Stderr, "ql3-control: %v\n", describe(err))
		if errs.Code(err) == errs.Invalid {
			return app.ExitUsage
		}
		return app.ExitError
	}
	if m.Serving() {
		// SIGHUP re-reads the worker ingress's certificate, CA bundle and
		// CRL; bad material is reported and the running context kept.
		hup := make(chan os.Signal, 1)
		signal.Notify(hup, syscall.SIGHUP)
		defer signal.Stop(hup)
	wait:
		for {
			select {
			case <-ctx.Done():
				break wait
			case <-hup:
				_ = m.Reload()
			case err := <-m.Err():
				if err != nil {
					fmt.Fprintf(os.Stderr, "ql3-control: server failed: %v\n", err)
					_ = m.Close()
					return 1
				}
				break wait
			}
		}
		// A second signal while draining kills the process the default way.
		stop()
	}
	if err := m.Close(); err != nil {
		fmt.Fprintf(os.Stderr, "ql3-control: %v\n", err)
		return 1
	}
	return 0
}

// describe renders a coded error as "field: message (code)".
func describe(err error) string {
	if code := errs.Code(err); code != errs.Internal {
		return fmt.Sprintf("%v (%s)", err, code)
	}
	return err.Error()
}
