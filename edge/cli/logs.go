package cli

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/ql3/ql3/edge/httpapi"
)

func logsCmd(ctx context.Context, env Env, args []string) error {
	fs := newFlagSet(env, "logs", "RUN [-f] [--attempt N]",
		"Print the output (stdout and stderr interleaved) of a run's attempt, the newest by default.\n"+
			"With -f, keep printing as output arrives until the run ends, moving on to retry attempts.")
	var cf clientFlags
	cf.register(fs)
	follow := fs.Bool("f", false, "follow the output until the run ends")
	attempt := fs.Int("attempt", 0, "attempt number (default: the newest)")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if err := exactArgs(pos, 1, "RUN (id)"); err != nil {
		return err
	}
	if *attempt < 0 {
		return usagef("--attempt must be >= 1")
	}
	c, err := cf.client(env)
	if err != nil {
		return err
	}
	r, err := getRun(ctx, c, pos[0], cf)
	if err != nil {
		return err
	}
	n := *attempt
	if n == 0 {
		n = max(r.AttemptCount, 1)
	}
	if !*follow {
		return printLog(ctx, env.Stdout, c, r.ID, n, cf)
	}
	// offset is how much of attempt n was printed: following the same
	// attempt again (it ended before the Run did) continues from there.
	var offset int64
	for {
		if offset, err = followLog(ctx, env.Stdout, c, r.ID, n, offset); err != nil {
			return err
		}
		if *attempt != 0 {
			return nil
		}
		if r, err = getRun(ctx, c, r.ID, cf); err != nil {
			return err
		}
		if r.AttemptCount <= n {
			if runEnded(r) {
				return nil
			}
			// The attempt ended and no new one exists yet: the run is
			// between states; following the same attempt again returns
			// at once, so look at the run once more after the poll.
			if err := sleepCtx(ctx, waitPoll); err != nil {
				return err
			}
			continue
		}
		n, offset = r.AttemptCount, 0
		fmt.Fprintf(env.Stderr, "--- attempt %d ---\n", n)
	}
}

func getRun(ctx context.Context, c *Client, id string, cf clientFlags) (httpapi.Run, error) {
	ctx, cancel := withTimeout(ctx, cf.timeout)
	defer cancel()
	var r httpapi.Run
	err := c.do(ctx, request{method: http.MethodGet, path: runPath(id)}, &r)
	return r, err
}

func logPath(runID string, n int) string {
	return runPath(runID) + "/attempts/" + strconv.Itoa(n) + "/log"
}

// printLog copies the log's current bytes to w, one range at a time.
func printLog(ctx context.Context, w io.Writer, c *Client, runID string, n int, cf clientFlags) error {
	var offset int64
	for {
		rctx, cancel := withTimeout(ctx, cf.timeout)
		q := url.Values{"offset": {strconv.FormatInt(offset, 10)}}
		resp, err := c.send(rctx, request{method: http.MethodGet, path: logPath(runID, n), query: q})
		if err != nil {
			cancel()
			return err
		}
		got, err := io.Copy(w, resp.Body)
		next, _ := strconv.ParseInt(resp.Header.Get("X-Log-Next-Offset"), 10, 64)
		size, _ := strconv.ParseInt(resp.Header.Get("X-Log-Size"), 10, 64)
		resp.Body.Close()
		cancel()
		if err != nil {
			return err
		}
		offset += got
		if got == 0 || next >= size {
			return nil
		}
	}
}

// followLog streams one attempt's log from offset until the server reports
// it complete and returns the offset reached. A stream that breaks off
// (server restart) resumes from the last byte.
func followLog(ctx context.Context, w io.Writer, c *Client, runID string, n int, offset int64) (int64, error) {
	for tries := 0; ; tries++ {
		q := url.Values{"offset": {strconv.FormatInt(offset, 10)}, "follow": {"1"}}
		resp, err := c.send(ctx, request{method: http.MethodGet, path: logPath(runID, n), query: q})
		if err != nil {
			return offset, err
		}
		got, cerr := io.Copy(w, resp.Body)
		resp.Body.Close()
		offset += got
		if cerr == nil && resp.Trailer.Get("X-Log-Complete") == "true" {
			return offset, nil
		}
		if ctx.Err() != nil {
			return offset, ctx.Err()
		}
		if tries >= 3 && got == 0 {
			if cerr != nil {
				return offset, fmt.Errorf("following the log of run %s attempt %d: %w", runID, n, cerr)
			}
			return offset, fmt.Errorf("following the log of run %s attempt %d: the stream ended before the log was complete", runID, n)
		}
		if got > 0 {
			tries = 0
		}
		if err := sleepCtx(ctx, waitPoll); err != nil {
			return offset, err
		}
	}
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
