package pullpace

import "time"

// PullForecastSQLForTest is the pacer's read, for its plan test.
var PullForecastSQLForTest = pullForecastSQL

// NextReadForTest is how long Run would wait at now before its next read.
func (p *PullPacer) NextReadForTest(now time.Time) time.Duration { return p.nextRead(now) }
