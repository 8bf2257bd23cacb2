// Command ql3-worker is the router-sized pull worker of a ql3 cluster: it
// opens a session with the control plane's worker ingress (mTLS), pulls
// offers, runs them in process groups, uploads their logs and completions,
// and keeps a durable journal so a crash never runs an attempt twice.
// See worker/app for flags, QL3_* variables and the config file.
package main

import (
	"os"

	"github.com/ql3/ql3/worker/app"
)

var version = "dev"

func main() {
	os.Exit(app.Main(version, os.Args[1:], os.Getenv, os.Stderr))
}
