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

// parseFormat accepts the log line formats: "text" (slog's key=value
// lines, the default) and "json" (one JSON object per line, for collectors).
func parseFormat(s string) (string, error) {
	switch strings.ToLower(s) {
	case "", "text":
		return "text", nil
	case "json":
		return "json", nil
	}
	return "", errs.Invalidf("logFormat", "must be text or json, got %.16q", s)
}

// newLogger returns the process logger: text or JSON lines on w at level.
func newLogger(w io.Writer, level, format string) (*slog.Logger, error) {
	lv, err := parseLevel(level)
	if err != nil {
		return nil, err
	}
	f, err := parseFormat(format)
	if err != nil {
		return nil, err
	}
	opts := &slog.HandlerOptions{Level: lv}
	if f == "json" {
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return slog.New(slog.NewTextHandler(w, opts)), nil
}
