package notify

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"strings"

	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/notify/channel"
	"github.com/ql3/ql3/core/run"
)

// Environment variables a Run's process gets (sendNotify).
const (
	EnvURL   = "QL3_NOTIFY_URL"
	EnvToken = "QL3_NOTIFY_TOKEN"
)

// SendPath is the sendNotify endpoint; it takes a Run token, not the
// admin token.
const SendPath = "/api/v1/notify/send"

// Tokens issues and checks per-Run tokens: "ql3n_<run id>_<HMAC>" under a
// key that lives only in this process's memory, so a token names exactly
// one Run and dies with the process (a Run does not outlive it: a restart
// records it lost). Whether the Run is still active is checked on use.
type Tokens struct{ key [32]byte }

// NewTokens draws a fresh key.
func NewTokens() (*Tokens, error) {
	t := &Tokens{}
	if _, err := rand.Read(t.key[:]); err != nil {
		return nil, err
	}
	return t, nil
}

const tokenPrefix = "ql3n_"

func (t *Tokens) mac(runID string) string {
	h := hmac.New(sha256.New, t.key[:])
	h.Write([]byte("ql3/notify/run-token/v1\x00" + runID))
	return hex.EncodeToString(h.Sum(nil))
}

// Issue returns the token of runID.
func (t *Tokens) Issue(runID string) string { return tokenPrefix + runID + "_" + t.mac(runID) }

// Verify returns the Run a token was issued for.
func (t *Tokens) Verify(token string) (string, bool) {
	rest, ok := strings.CutPrefix(token, tokenPrefix)
	if !ok || len(rest) > 200 {
		return "", false
	}
	i := strings.LastIndexByte(rest, '_')
	if i <= 0 {
		return "", false
	}
	runID, mac := rest[:i], rest[i+1:]
	if !hmac.Equal([]byte(mac), []byte(t.mac(runID))) {
		return "", false
	}
	return runID, true
}

// ScriptResult says how many channels a sendNotify call was queued for.
type ScriptResult struct {
	Queued int
}

// Script queues a script's sendNotify(title, content) for runID: to the
// channels of every enabled rule that matches the Run's task for kind
// "script" (each channel once), through the same outbox. The Run must be
// active; calls are bounded per Run per minute.
func (d *Deliverer) Script(ctx context.Context, runID string, m channel.Message) (ScriptResult, error) {
	if err := channel.CheckMessage(m); err != nil {
		return ScriptResult{}, err
	}
	rn, err := d.cfg.Runs.GetRun(ctx, runID)
	if errs.Code(err) == errs.NotFound {
		return ScriptResult{}, errs.E(errs.Unauthorized, "Authorization", "the token's run does not exist")
	}
	if err != nil {
		return ScriptResult{}, err
	}
	if rn.Status != run.RunRunning && rn.Status != run.RunDispatching {
		return ScriptResult{}, errs.E(errs.Unauthorized, "Authorization", "the token's run is not active (status %s)", rn.Status)
	}
	now := d.nowMs()
	seq, err := d.scripts.Charge(runID, now)
	if err != nil {
		return ScriptResult{}, err
	}
	rules, err := d.cfg.Store.ListRules(ctx)
	if err != nil {
		return ScriptResult{}, err
	}
	task, _ := d.cfg.Runs.GetTask(ctx, rn.TaskID)
	rows := d.pol.ScriptRows(rules, runID, rn.TaskID, TaskLabels(task), seq, m, now)
	if len(rows) == 0 {
		return ScriptResult{}, nil
	}
	if _, err := d.cfg.Store.AddDeliveries(ctx, rows); err != nil {
		return ScriptResult{}, err
	}
	d.Kick()
	return ScriptResult{Queued: len(rows)}, nil
}
