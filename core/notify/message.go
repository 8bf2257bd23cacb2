package notify

import (
	"fmt"
	"strings"
)

// Outcome is what a notification about one Run says: the facts the
// run-event feed and the Run row carry (never output, never env values).
type Outcome struct {
	Kind       Kind
	TaskName   string
	RunID      string
	Attempt    int
	ExitCode   *int
	ErrorClass string
	Reason     string
	AtMs       int64
}

// Compose returns the title and content of the notification of o.
func Compose(o Outcome) (title, content string) {
	verb := map[Kind]string{
		KindFailed: "failed", KindTimedOut: "timed out", KindLost: "was lost", KindCancelled: "was cancelled",
		KindRecovered: "recovered", KindSucceeded: "succeeded",
	}[o.Kind]
	if verb == "" {
		verb = string(o.Kind)
	}
	title = truncate(fmt.Sprintf("ql3: %s %s", o.TaskName, verb), 200)
	var b strings.Builder
	fmt.Fprintf(&b, "task: %s\nrun: %s\n", o.TaskName, o.RunID)
	if o.Attempt > 0 {
		fmt.Fprintf(&b, "attempt: %d\n", o.Attempt)
	}
	if o.ExitCode != nil {
		fmt.Fprintf(&b, "exit code: %d\n", *o.ExitCode)
	}
	if o.ErrorClass != "" {
		fmt.Fprintf(&b, "error: %s\n", o.ErrorClass)
	}
	if o.Reason != "" {
		fmt.Fprintf(&b, "reason: %s\n", o.Reason)
	}
	return title, strings.TrimRight(b.String(), "\n")
}

// Summary is the message a coalescing window ends with when it held
// outcomes back.
func Summary(taskName string, held int, windowMs int64) (title, content string) {
	return truncate(fmt.Sprintf("ql3: %s — %d more notification(s) held back", taskName, held), 200),
		fmt.Sprintf("%d further outcome(s) of task %s within %s were not sent one by one (coalescing: at most a few per window).",
			held, taskName, windowText(windowMs))
}

// Digest joins the messages held by quiet hours into one.
func Digest(titles []string) (title, content string) {
	title = fmt.Sprintf("ql3: %d notification(s) held during quiet hours", len(titles))
	var b strings.Builder
	for i, t := range titles {
		if b.Len() > 8<<10 {
			fmt.Fprintf(&b, "… and %d more\n", len(titles)-i)
			break
		}
		b.WriteString("- " + t + "\n")
	}
	return title, strings.TrimRight(b.String(), "\n")
}

func windowText(ms int64) string {
	switch {
	case ms%3600000 == 0:
		return fmt.Sprintf("%d h", ms/3600000)
	case ms%60000 == 0:
		return fmt.Sprintf("%d min", ms/60000)
	}
	return fmt.Sprintf("%d s", ms/1000)
}

// truncate cuts s to at most n bytes on a rune boundary.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n]
}

// Retry policy of a delivery: exponential backoff from RetryBaseMs,
// doubling up to RetryMaxMs, with jitter; given up once GiveUpAfterMs has
// passed since the notification was recorded.
const (
	RetryBaseMs   = 2_000
	RetryMaxMs    = 10 * 60_000
	GiveUpAfterMs = 6 * 3600_000
)

// RetryDelayMs is the wait before attempt n+1 after n failed attempts
// (n ≥ 1): base·2^(n-1) capped at max, then scaled by a jitter factor in
// [0.5, 1.0) given as jitter ∈ [0, 1) (the caller draws it), so
// deliverers that failed together do not retry together.
func RetryDelayMs(n int, baseMs, maxMs int64, jitter float64) int64 {
	if n < 1 {
		n = 1
	}
	d := baseMs
	for i := 1; i < n && d < maxMs; i++ {
		d *= 2
	}
	if d > maxMs {
		d = maxMs
	}
	if jitter < 0 || jitter >= 1 {
		jitter = 0
	}
	return int64(float64(d) * (0.5 + jitter/2))
}

// ScriptIdempotencyKey names one sendNotify call of one Run on one
// channel: seq counts the Run's calls.
func ScriptIdempotencyKey(ruleID, channelID, runID string, seq int64) string {
	return fmt.Sprintf("ql3:notify:v1:script:%s:%s:%s:%d", ruleID, channelID, runID, seq)
}
