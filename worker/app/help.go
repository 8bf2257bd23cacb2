package app

import (
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/ql3/ql3/worker/agent"
	"github.com/ql3/ql3/worker/client"
	"github.com/ql3/ql3/worker/journal"
)

// settingHelp describes each setting's flag (by its QL3_* variable): what
// it does and its default, printed by --help.
var settingHelp = map[string]struct{ usage, def string }{
	"QL3_INGRESS_URL":        {"the control plane's worker ingress, https://host:5801 (required)", ""},
	"QL3_SERVER_NAME":        {"TLS name to verify when it differs from the ingress URL's host", "the URL's host"},
	"QL3_CREDENTIAL_FILE":    {"file with this worker's credential, ql3w_… (0600; required)", ""},
	"QL3_CERT_FILE":          {"client certificate, PEM (required)", ""},
	"QL3_KEY_FILE":           {"client private key, PEM, 0600 (required)", ""},
	"QL3_CA_FILE":            {"CA bundle that verifies the ingress, PEM, 1-8 certificates (required)", ""},
	"QL3_STATE_DIR":          {"journal and log spool, an absolute path; one worker per directory", DefaultConfig().StateDir},
	"QL3_WORK_DIR":           {"parent of the tasks' working directories", "<state dir>/work"},
	"QL3_PROFILE":            {"router or node: the defaults of --capacity, --cadence-ms and --log-max-bytes", DefaultConfig().Profile},
	"QL3_LOG_LEVEL":          {"debug, info, warn or error", DefaultConfig().LogLevel},
	"QL3_LOG_FORMAT":         {"text or json: one slog record per line on stderr", DefaultConfig().LogFormat},
	"QL3_CADENCE_MS":         {"pace of the worker's loop (session, pulls, uploads), ms", fmt.Sprintf("router %d, node %d", agent.RouterCadence.Milliseconds(), agent.NodeCadence.Milliseconds())},
	"QL3_LOG_MAX_BYTES":      {"output kept per attempt, bytes", fmt.Sprintf("router %d, node %d", agent.RouterLogBytes, agent.NodeLogBytes)},
	"QL3_HEARTBEAT_MS":       {"heartbeat interval until the ingress names one, ms (5000..300000)", fmt.Sprint(agent.DefaultHeartbeat.Milliseconds())},
	"QL3_DRAIN_GRACE_MS":     {"after SIGTERM, how long running attempts may finish before they are stopped, ms", fmt.Sprint(agent.DefaultDrainGrace.Milliseconds())},
	"QL3_KILL_GRACE_MS":      {"SIGTERM to SIGKILL wait when an attempt is stopped, ms", fmt.Sprint(agent.DefaultKillGrace.Milliseconds())},
	"QL3_FENCE_MARGIN_MS":    {"stop an attempt this long (plus the kill grace) before its lease would lapse, ms", fmt.Sprint(agent.DefaultFenceMargin.Milliseconds())},
	"QL3_REQUEST_TIMEOUT_MS": {"timeout of one request to the ingress, ms (1000..60000)", fmt.Sprint(client.DefaultTimeout.Milliseconds())},
	"QL3_CAPACITY":           {"attempts run at once", fmt.Sprintf("router %d, node %d", agent.RouterCapacity, agent.NodeCapacity)},
	"QL3_INBOX_MAX":          {fmt.Sprintf("accepted offers the journal holds (1..%d)", journal.HardInbox), fmt.Sprint(journal.DefaultInbox)},
	"QL3_LABELS":             {"placement labels, k=v,k=v", ""},
	"QL3_INTERPRETERS":       {"EXT=PROGRAM runs scripts of EXT (repeatable; env, config: EXT=P,EXT=P)", ""},
}

// flagUsage is the flag's usage text: what it does, its default, its
// variable.
func flagUsage(env string) string {
	h, ok := settingHelp[env]
	if !ok {
		return "(" + env + ")"
	}
	notes := []string{}
	if h.def != "" {
		notes = append(notes, "default "+h.def)
	}
	notes = append(notes, "env "+env)
	return h.usage + " (" + strings.Join(notes, "; ") + ")"
}

const usageHead = `Usage: ql3-worker [flags]

Run a pull worker of a ql3 cluster: open a session with the control plane's worker
ingress (mutual TLS and the worker credential), pull offers, run them in process
groups, upload their output and completions, and keep a journal in the state dir so
a restart never runs an attempt twice. SIGTERM drains (running attempts may finish
within --drain-grace-ms); a second signal stops them at once and exits 1.

Settings, lowest precedence first: defaults (by --profile), the JSON config file
(--config; fields are the flags' names in camelCase: ingressUrl, stateDir, ...),
QL3_* variables, flags.

Flags:
`

const usageTail = `
Exit status: 0 stopped cleanly (or --help, --version), 1 a journal failure or a second
signal, 2 a bad flag, variable or config file.
`

// printUsage writes the help: what the worker does, each flag with its
// description and default, and the exit statuses.
func printUsage(w io.Writer, fs *flag.FlagSet) {
	fmt.Fprint(w, usageHead)
	fs.VisitAll(func(f *flag.Flag) {
		kind := " value"
		if b, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
			kind = ""
		}
		fmt.Fprintf(w, "  --%s%s\n        %s\n", f.Name, kind, f.Usage)
	})
	fmt.Fprint(w, usageTail)
}
