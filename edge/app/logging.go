package app

import (
	"io"
	"log/slog"
	"strings"

	"github.com/ql3/ql3/core/errs"
)

func parseLevel(s string) (slog.Level, error) {
	switch strings.ToLower(s) {
	case "debug":
		return slog.LevelDebug, nil
	case "", "info":
		return slog.LevelInfo, nil
	case "warn", "warning":
		return slog.LevelWarn, nil
	case "error":
		return slog.LevelError, nil
	}
	return 0, errs.Invalidf("logLevel", "must be debug, info, warn or error, got %q", s)
}

// newLogger returns the process logger: text lines on w at level.
func newLogger(w io.Writer, level string) (*slog.Logger, error) {
	lv, err := parseLevel(level)
	if err != nil {
		return nil, err
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: lv})), nil
}
