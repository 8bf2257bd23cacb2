package runner

import (
	"time"

	"github.com/ql3/ql3/edge/clock"
	"github.com/ql3/ql3/worker/executor"
)

// ExecutorClock adapts the edge's clock to the executor's Clock (the
// executor lives in the worker module and cannot import edge/clock; the
// method sets match, only the Timer result type is named differently).
func ExecutorClock(c clock.Clock) executor.Clock {
	if c == nil {
		return nil
	}
	return execClock{c}
}

type execClock struct{ c clock.Clock }

func (e execClock) Now() time.Time                          { return e.c.Now() }
func (e execClock) NewTimer(d time.Duration) executor.Timer { return e.c.NewTimer(d) }
