package agent

import (
	"bytes"
	"strings"
	"testing"

	"github.com/ql3/ql3/core/canonjson"
	"github.com/ql3/ql3/core/protocol"
	"github.com/ql3/ql3/core/spec"
)

func envOffer(t *testing.T, vars ...protocol.EnvVar) (protocol.Offer, []byte) {
	t.Helper()
	cmd, err := spec.Decode([]byte(`{"kind":"qinglong/command@v1","shell":{"command":"true"},"environment":{"TZ":"UTC","B":"inline"}}`))
	if err != nil {
		t.Fatal(err)
	}
	sd, err := cmd.Digest()
	if err != nil {
		t.Fatal(err)
	}
	o := protocol.Offer{V: 1, RunID: "run-1", AttemptID: "att-1", AttemptNumber: 1, WorkerID: "w-1",
		SessionID: "3f2b1c9e-1d2a-4b7c-8e9f-0a1b2c3d4e5f", Generation: 1, OfferID: "7d3b0c3a-52a5-4f1e-8f8e-0a7c5b9d1e22",
		LeaseGeneration: 1, LeaseVersion: 1, LeaseExpiresAtMs: 1, LeaseTokenDigest: canonjson.Sum("t", []byte("x")),
		TaskID: "task-1", TaskRevision: 1, ExecutionRevisionID: "rev-1", ExecutionRevisionDigest: canonjson.Sum("r", []byte("x")),
		SpecDigest: sd, Spec: cmd, TimeoutMs: 1000, Env: vars}
	raw, err := o.Encode()
	if err != nil {
		t.Fatal(err)
	}
	return o, raw
}

// The journal keeps the offer without its env; the process gets the
// offer's variables over the spec's inline environment; the output is
// masked before the spool, across writes, with a count.
func TestEnvNeverReachesTheDisk(t *testing.T) {
	o, raw := envOffer(t, protocol.EnvVar{Name: "A", Value: "first-secret&second-secret"}, protocol.EnvVar{Name: "B", Value: "bee-secret"})
	kept, err := journalOffer(o, raw)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(kept, []byte("secret")) {
		t.Fatalf("journaled offer holds a value: %s", kept)
	}
	back, err := protocol.DecodeOffer(kept)
	if err != nil || back.RunID != o.RunID || len(back.Env) != 0 {
		t.Fatalf("journaled offer: %v, env %v", err, back.Env)
	}
	plain, rawPlain := envOffer(t)
	if kept, _ := journalOffer(plain, rawPlain); !bytes.Equal(kept, rawPlain) {
		t.Error("an offer without env is not journaled as received")
	}

	env, err := processEnv(o)
	if err != nil {
		t.Fatal(err)
	}
	if env["A"] != "first-secret&second-secret" || env["B"] != "bee-secret" || env["TZ"] != "UTC" || len(env) != 3 {
		t.Errorf("process env %v", env)
	}

	var spool bytes.Buffer
	m := newMaskedOutput(&spool, o)
	for _, chunk := range []string{"a=first-sec", "ret b=bee-", "secret whole=first-secret&second-secret end\n"} {
		if _, err := m.Write([]byte(chunk)); err != nil {
			t.Fatal(err)
		}
	}
	if n := m.finish(); n != 3 {
		t.Errorf("masked %d occurrences, want 3", n)
	}
	if got := spool.String(); strings.Contains(got, "secret") || got != "a=*** b=*** whole=*** end\n" {
		t.Errorf("spooled %q", got)
	}
	if newMaskedOutput(&spool, protocol.Offer{}) != nil {
		t.Error("an offer without env gets a masker")
	}
}
