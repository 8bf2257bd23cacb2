package sqlite

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/edge"
	"github.com/ql3/ql3/worker/clock"
)

const groupCrashEnv = "QL3_SQLITE_GROUP_CRASH"

// groupMembers is the size of the crash tests' group.
const groupMembers = 5

// groupCrashChild ("<mode>:<path>") sets up groupMembers due schedules and
// SIGKILLs itself: mode "between" inside the group, after two members and
// before the commit; mode "after" once the group's commit has returned.
func groupCrashChild(v string) {
	mode, path, _ := strings.Cut(v, ":")
	fail := func(err error) {
		fmt.Fprintln(os.Stderr, "group crash child:", err)
		os.Exit(3)
	}
	ctx := context.Background()
	s, err := Open(ctx, path, Options{Clock: clock.NewFake(t0)})
	if err != nil {
		fail(err)
	}
	tb := &childTB{fail: fail}
	everySecond(tb, s, groupMembers)
	batch := dueFires(tb, s)
	fns := make([]writeFn, 0, len(batch)+1)
	for i, b := range batch {
		if i == 2 && mode == "between" {
			fns = append(fns, func(*wtx, *signals) error {
				syscall.Kill(os.Getpid(), syscall.SIGKILL)
				select {} // not reached
			})
		}
		fns = append(fns, s.decisionFn(ctx, b.Item, b.Decision, fireAt, new(edge.Admission)))
	}
	for _, err := range s.writeBatch(ctx, false, fns) {
		if err != nil {
			fail(err)
		}
	}
	syscall.Kill(os.Getpid(), syscall.SIGKILL)
	select {} // not reached
}

func TestKill9InsideAGroup(t *testing.T) {
	for _, mode := range []string{"between", "after"} {
		t.Run(mode, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "edge.db")
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), groupCrashEnv+"="+mode+":"+path)
			err := cmd.Run()
			ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus)
			if err == nil || !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
				t.Fatalf("child did not die of SIGKILL: %v", err)
			}
			ctx := context.Background()
			s := openAt(t, path, clock.NewFake(t0))
			runs := scheduledRuns(t, s)
			due := dueFires(t, s)
			switch mode {
			case "between": // nothing of the group committed, everything still due
				if len(runs) != 0 || len(due) != groupMembers {
					t.Fatalf("after a kill inside the group: runs %v, due %d", runs, len(due))
				}
				for i, r := range s.ApplyDecisions(ctx, due, fireAt) {
					if r.Err != nil || !r.Admission.Created {
						t.Fatalf("member %d after restart: %+v", i, r)
					}
				}
				// The same decisions again: every member loses its
				// compare-and-set, nothing is admitted twice.
				for i, r := range s.ApplyDecisions(ctx, due, fireAt) {
					if errs.Code(r.Err) != errs.Conflict {
						t.Fatalf("replayed member %d: %+v", i, r)
					}
				}
			case "after": // the whole group committed, nothing is due
				if len(runs) != groupMembers || len(due) != 0 {
					t.Fatalf("after a kill past the commit: runs %v, due %d", runs, len(due))
				}
			}
			runs = scheduledRuns(t, s)
			if len(runs) != groupMembers {
				t.Fatalf("runs by key: %v", runs)
			}
			for k, n := range runs {
				if n != 1 {
					t.Fatalf("occurrence %s admitted %d times", k, n)
				}
			}
		})
	}
}

// childTB is the testing.TB of the crash child: a failure ends the process.
type childTB struct {
	testing.TB
	fail func(error)
}

func (c *childTB) Helper()                   {}
func (c *childTB) Fatal(args ...any)         { c.fail(fmt.Errorf("%s", fmt.Sprint(args...))) }
func (c *childTB) Fatalf(f string, a ...any) { c.fail(fmt.Errorf(f, a...)) }
