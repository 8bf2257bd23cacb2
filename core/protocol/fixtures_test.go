package protocol

import (
	"testing"

	"github.com/ql3/ql3/core/canonjson"
	"github.com/ql3/ql3/core/fence"
	"github.com/ql3/ql3/core/placement"
	"github.com/ql3/ql3/core/run"
	"github.com/ql3/ql3/core/spec"
)

// Shared, valid example bodies. Tests mutate copies.

const (
	token     fence.LeaseToken = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8"
	offerID                    = "7d3b0c3a-52a5-4f1e-8f8e-0a7c5b9d1e22"
	sessionID                  = "3f2b1c9e-1d2a-4b7c-8e9f-0a1b2c3d4e5f"
)

func caps() placement.Capabilities {
	return placement.Capabilities{OS: "linux", Arch: "mipsle", Executors: []string{"argv", "shell"},
		Runtimes: map[string]string{"python": "3.11.4"}, Labels: map[string]string{"site": "home"},
		Features: []string{"softfloat"}, MemoryMiB: 128, DiskMiB: 512}.Normalize()
}

func sessionOpen() SessionOpen {
	return SessionOpen{V: 1, AgentVersion: "ql3-worker/0.1.0 linux/mipsle", CredentialID: "cred-7",
		Capacity: 2, Capabilities: caps()}
}

func heartbeat(t testing.TB) SessionHeartbeat {
	d, err := caps().Digest()
	if err != nil {
		t.Fatal(err)
	}
	return SessionHeartbeat{V: 1, SessionID: sessionID, Generation: 3, CapabilitiesDigest: d,
		CredentialID: "cred-7", RunningAttemptIDs: []string{"att_1", "att_2"}}
}

func transition() SessionTransition {
	return SessionTransition{V: 1, SessionID: sessionID, Generation: 3, To: SessionDraining}
}

func control() LeaseControl {
	return LeaseControl{V: 1, RunID: "run_1", AttemptID: "att_1", LeaseGeneration: 2, LeaseVersion: 5,
		Action: LeaseExtend, LeaseExpiresAtMs: 1_764_400_045_000}
}

func sessionState() SessionState {
	cancel := control()
	cancel.AttemptID, cancel.Action, cancel.CancelGraceMs = "att_2", LeaseCancel, 10_000
	return SessionState{V: 1, SessionID: sessionID, Generation: 3, Status: SessionOnline,
		HeartbeatIntervalMs: 10_000, LeaseExpiresAtMs: 1_764_400_045_000,
		Controls: []LeaseControl{control(), cancel}}
}

func pull() OfferPullRequest {
	return OfferPullRequest{V: 1, SessionID: sessionID, Generation: 3, OfferID: offerID,
		LeaseToken: token, WaitMs: 5_000}
}

func leaseRef() LeaseRef {
	return LeaseRef{SessionID: sessionID, Generation: 3, RunID: "run_1", AttemptID: "att_1",
		OfferID: offerID, LeaseGeneration: 2, LeaseToken: token}
}

func ack() Ack { return Ack{V: 1, LeaseRef: leaseRef(), Phase: AckStarting} }

func logChunk() LogChunk {
	return LogChunk{V: 1, LeaseRef: leaseRef(), Stream: Stderr, Offset: 4096,
		Data: []byte("line 1\n\x00\xff binary <ok>\n")}
}

func logReceipt() LogReceipt {
	return LogReceipt{V: 1, AttemptID: "att_1", Stream: Stdout, NextOffset: 8192, Closed: true}
}

func intp(v int) *int { return &v }

func completion() Completion {
	return Completion{V: 1, LeaseRef: leaseRef(), Status: run.AttemptFailed, ErrorClass: run.ErrorProcessExit,
		ExitCode: intp(3), StartedAtMs: 1_764_400_001_000, FinishedAtMs: 1_764_400_002_500,
		StdoutBytes: 8192, StderrBytes: 4130, LogTruncated: true}
}

func receipt() CompletionReceipt {
	return CompletionReceipt{V: 1, AttemptID: "att_1", Disposition: Recorded}
}

const specJSON = `{"kind":"qinglong/command@v1","shell":{"command":"python3 /opt/jobs/sign.py --all","shell":"/bin/sh"},
"environment":{"TZ":"Asia/Shanghai"},"workingDirectory":"/opt/jobs","timeoutMs":600000,
"retry":{"maxAttempts":3,"backoffBaseMs":1000,"backoffMaxMs":60000,"retryOnLost":true},"concurrency":"forbid",
"placement":{"required":{"os":"linux","executors":["shell"],"runtimes":{"python":">=3.9"}},
"preferred":[{"label":"site","value":"home","weight":10}]}}`

func offer(t testing.TB) Offer {
	cmd, err := spec.Decode([]byte(specJSON))
	if err != nil {
		t.Fatal(err)
	}
	sd, err := cmd.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return Offer{V: 1, RunID: "run_1", AttemptID: "att_1", AttemptNumber: 2, WorkerID: "w-router-1",
		SessionID: sessionID, Generation: 3, OfferID: offerID, LeaseGeneration: 2, LeaseVersion: 1,
		LeaseExpiresAtMs: 1_764_400_045_000, LeaseTokenDigest: canonjson.Digest(token.Digest()),
		TaskID: "task_7", TaskRevision: 4, ScheduledForMs: 1_764_400_000_000,
		ExecutionRevisionID: "rev_9", ExecutionRevisionDigest: canonjson.Sum("test/revision", []byte("rev_9")),
		SpecDigest: sd, Spec: cmd, TimeoutMs: 300_000}
}
