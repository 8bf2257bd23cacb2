package app

// StopNow cuts a shutdown's drain short (a second SIGTERM or SIGINT):
// attempts still running are stopped at once instead of after the drain
// grace, and recorded cancelled with reason shutdown as they would be after
// the grace (ADR 0040). Call it while Close runs, from another goroutine;
// before Run or after Close it changes nothing that matters.
func (m *Main) StopNow() {
	if m.engine != nil {
		m.log.Warn("second signal: stopping running attempts now")
		m.engine.runner.StopNow()
	}
}
