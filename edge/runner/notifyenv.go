package runner

import "github.com/ql3/ql3/edge"

// AttemptEnvFunc returns variables one attempt's process gets on top of
// its composed environment (the app passes sendNotify's QL3_NOTIFY_URL
// and the Run's QL3_NOTIFY_TOKEN). Names must start with QL3_: the env
// store and the task's inline environment cannot set that prefix, so
// these never collide with a user's variable.
type AttemptEnvFunc func(c edge.Claim) map[string]string

// attemptExtraEnv is the hook's variables for one attempt (nil without a
// hook); they go to the executor's ExtraEnv, beside QL3_RUN_ID.
func (r *Runner) attemptExtraEnv(c edge.Claim) map[string]string {
	if r.cfg.AttemptEnv == nil {
		return nil
	}
	return r.cfg.AttemptEnv(c)
}
