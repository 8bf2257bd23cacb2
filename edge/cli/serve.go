package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"

	"github.com/ql3/ql3/edge/app"
)

// serveCmd runs the server in the foreground until ctx ends (SIGINT or
// SIGTERM in main) or the HTTP server fails.
func serveCmd(ctx context.Context, env Env, args []string) error {
	m := app.NewMain()
	m.Stdout, m.Stderr, m.Getenv, m.Version, m.Program = env.Stdout, env.Stderr, env.Getenv, env.Version, env.Program
	if err := m.ParseFlags(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return &usageError{err.Error()}
	}
	if err := m.Run(ctx); err != nil {
		return err
	}
	var serveErr error
	select {
	case <-ctx.Done():
	case err, ok := <-m.Err():
		if ok {
			serveErr = fmt.Errorf("http server: %w", err)
		}
	}
	return errors.Join(serveErr, closeDraining(m, env.StopNow))
}

// closeDraining closes m (which drains running attempts for the drain
// grace) and cuts the drain short when stopNow closes.
func closeDraining(m *app.Main, stopNow <-chan struct{}) error {
	closed := make(chan struct{})
	defer close(closed)
	if stopNow != nil {
		go func() {
			select {
			case <-stopNow:
				m.StopNow()
			case <-closed:
			}
		}()
	}
	return m.Close()
}
