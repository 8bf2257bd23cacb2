package coordinator

import (
	"context"
	"log/slog"
	"time"
)

// Clock paces the loop. It is never used for a fence or a decision.
type Clock interface {
	Now() time.Time
	// After returns a channel that receives once d has passed.
	After(d time.Duration) <-chan time.Time
}

type systemClock struct{}

func (systemClock) Now() time.Time                         { return time.Now() }
func (systemClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

// SystemClock is the process clock.
func SystemClock() Clock { return systemClock{} }

// Diagnostic is one low-sensitivity event: no tokens, no specs, no
// connection strings; the error text is the translated (coded) error.
type Diagnostic struct {
	Kind      string // run_admitted, decide_failed, admit_failed, batch_fallback, admission_refused_{corrupt,raced,stale}, claim_failed, round_failed, listen_failed, next_due_failed, recovery_candidate
	Owner     string
	TriggerID string
	RunID     string
	Reason    string
	Err       error
	// Debug marks what is expected in normal operation (an admission
	// refused as raced or stale): logged at debug level, counted in
	// Metrics either way.
	Debug bool
	// Info marks a Run transition (run_admitted): logged at info level.
	Info bool
}

// Sink receives diagnostics. It must not block for long: the loop calls it
// inline.
type Sink func(Diagnostic)

// SlogSink writes diagnostics to l (slog.Default when nil) at warn level,
// or debug level for those marked Debug.
func SlogSink(l *slog.Logger) Sink {
	return func(d Diagnostic) {
		lg := l
		if lg == nil {
			lg = slog.Default()
		}
		level := slog.LevelWarn
		if d.Info {
			level = slog.LevelInfo
		}
		if d.Debug {
			level = slog.LevelDebug
			if !lg.Enabled(context.Background(), level) {
				return
			}
		}
		attrs := []slog.Attr{slog.String("kind", d.Kind), slog.String("owner", d.Owner)}
		if d.TriggerID != "" {
			attrs = append(attrs, slog.String("trigger", d.TriggerID))
		}
		if d.RunID != "" {
			attrs = append(attrs, slog.String("run", d.RunID))
		}
		if d.Reason != "" {
			attrs = append(attrs, slog.String("reason", d.Reason))
		}
		if d.Err != nil {
			attrs = append(attrs, slog.String("error", d.Err.Error()))
		}
		lg.LogAttrs(context.Background(), level, "scheduler diagnostic", attrs...)
	}
}
