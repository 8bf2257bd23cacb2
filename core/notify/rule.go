// Package notify decides which run outcomes become notifications, when
// they may be sent, and how many: rules, quiet hours and coalescing. It is
// pure (time is a parameter); the outbox, the delivery loop and the
// channels' HTTP calls live in each binary and in notify/channel.
//
// Notifications are derived from the run-event feed (a durable cursor per
// consumer), not written by the code paths that finish Runs: a failure is
// recorded in one place, and notifying is one reader of it.
package notify

import (
	"fmt"
	"sort"
	"strings"

	"github.com/ql3/ql3/core/errs"
)

// Kind is what happened to a Run, as a rule names it.
type Kind string

const (
	KindFailed    Kind = "failed"
	KindTimedOut  Kind = "timed_out"
	KindLost      Kind = "lost"
	KindCancelled Kind = "cancelled"
	// KindRecovered: a success whose previous finished Run of the same task
	// did not succeed.
	KindRecovered Kind = "recovered"
	// KindSucceeded: every success (opt-in; noisy for frequent tasks).
	KindSucceeded Kind = "succeeded"
	// KindScript: a script's own sendNotify(title, content).
	KindScript Kind = "script"
)

// Kinds lists the kinds a rule may name.
var Kinds = []Kind{KindFailed, KindTimedOut, KindLost, KindCancelled, KindRecovered, KindSucceeded, KindScript}

// DefaultKinds are the kinds a rule notifies when it names none: the
// outcomes that need a person.
var DefaultKinds = []Kind{KindFailed, KindTimedOut, KindLost}

// KindsOf maps a Run event type ("run.failed", …) to the kinds it is, given
// whether the task's previous finished Run failed. A success is both
// succeeded and, after a failure, recovered.
func KindsOf(eventType string, previousFailed bool) []Kind {
	switch eventType {
	case "run.failed":
		return []Kind{KindFailed}
	case "run.timed_out":
		return []Kind{KindTimedOut}
	case "run.lost":
		return []Kind{KindLost}
	case "run.cancelled":
		return []Kind{KindCancelled}
	case "run.succeeded":
		if previousFailed {
			return []Kind{KindSucceeded, KindRecovered}
		}
		return []Kind{KindSucceeded}
	}
	return nil
}

// Limits of a rule.
const (
	MaxRuleChannels = 16
	MaxRuleTasks    = 256
	MaxRuleLabels   = 32
)

// Rule says which outcomes of which tasks go to which channels.
// Scope: TaskIDs and Labels empty = every task (global); otherwise a task
// matches when its id is listed or it carries one of the labels.
type Rule struct {
	ID       string
	Kinds    []Kind
	TaskIDs  []string
	Labels   []string
	Channels []string
	Quiet    *QuietHours
	Coalesce Coalesce
	Enabled  bool
}

// Subject is the task an outcome belongs to, as rules see it.
type Subject struct {
	TaskID string
	Labels []string
}

// Validate checks a rule completely, naming the field at fault; it
// returns the rule with kinds defaulted, and lists sorted and deduplicated.
func (r Rule) Validate() (Rule, error) {
	if len(r.Channels) == 0 {
		return Rule{}, errs.Invalidf("channels", "must name at least one channel")
	}
	if len(r.Channels) > MaxRuleChannels {
		return Rule{}, errs.TooLargef("channels", "has %d entries, limit is %d", len(r.Channels), MaxRuleChannels)
	}
	if len(r.TaskIDs) > MaxRuleTasks {
		return Rule{}, errs.TooLargef("taskIds", "has %d entries, limit is %d", len(r.TaskIDs), MaxRuleTasks)
	}
	if len(r.Labels) > MaxRuleLabels {
		return Rule{}, errs.TooLargef("labels", "has %d entries, limit is %d", len(r.Labels), MaxRuleLabels)
	}
	if len(r.Kinds) == 0 {
		r.Kinds = append([]Kind(nil), DefaultKinds...)
	}
	for i, k := range r.Kinds {
		if !validKind(k) {
			return Rule{}, errs.Invalidf(fmt.Sprintf("kinds[%d]", i), "must be one of %s, got %q", kindList(), k)
		}
	}
	if r.Quiet != nil {
		q, err := r.Quiet.Validate()
		if err != nil {
			return Rule{}, errs.Prefix("quiet", err)
		}
		r.Quiet = &q
	}
	c, err := r.Coalesce.Validate()
	if err != nil {
		return Rule{}, errs.Prefix("coalesce", err)
	}
	r.Coalesce = c
	r.Kinds = uniqKinds(r.Kinds)
	r.TaskIDs, r.Labels, r.Channels = uniq(r.TaskIDs), uniq(r.Labels), uniq(r.Channels)
	return r, nil
}

// Matches reports whether an outcome of kind k of subject s is the rule's.
func (r Rule) Matches(k Kind, s Subject) bool {
	if !r.Enabled || !containsKind(r.Kinds, k) {
		return false
	}
	if len(r.TaskIDs) == 0 && len(r.Labels) == 0 {
		return true
	}
	for _, id := range r.TaskIDs {
		if id == s.TaskID {
			return true
		}
	}
	for _, l := range r.Labels {
		for _, have := range s.Labels {
			if l == have {
				return true
			}
		}
	}
	return false
}

func validKind(k Kind) bool { return containsKind(Kinds, k) }

func containsKind(ks []Kind, k Kind) bool {
	for _, x := range ks {
		if x == k {
			return true
		}
	}
	return false
}

func kindList() string {
	s := make([]string, len(Kinds))
	for i, k := range Kinds {
		s[i] = string(k)
	}
	return strings.Join(s, ", ")
}

func uniqKinds(ks []Kind) []Kind {
	s := make([]string, len(ks))
	for i, k := range ks {
		s[i] = string(k)
	}
	s = uniq(s)
	out := make([]Kind, len(s))
	for i, k := range s {
		out[i] = Kind(k)
	}
	return out
}

func uniq(in []string) []string {
	if len(in) == 0 {
		return nil
	}
	out := append([]string(nil), in...)
	sort.Strings(out)
	w := 1
	for i := 1; i < len(out); i++ {
		if out[i] != out[w-1] {
			out[w] = out[i]
			w++
		}
	}
	return out[:w]
}

// IdempotencyKey names one notification of one outcome on one channel:
// the receiver can drop a second delivery with the same key (at-least-once
// delivery resends only when the first attempt's outcome is unknown).
func IdempotencyKey(ruleID, channelID string, eventID int64, kind Kind) string {
	return fmt.Sprintf("ql3:notify:v1:%s:%s:%d:%s", ruleID, channelID, eventID, kind)
}
