package qlopen

import "strings"

// System is data of GET /open/system (QingLong's back/api/system.ts).
type System struct {
	IsInitialized bool   `json:"isInitialized"`
	Version       string `json:"version"`
	PublishTime   int64  `json:"publishTime"`
	Branch        string `json:"branch"`
	ChangeLog     string `json:"changeLog"`
	ChangeLogLink string `json:"changeLogLink"`
}

// SystemInfo is ql3's answer to GET /open/system.
func SystemInfo(version string) System {
	return System{IsInitialized: true, Version: version, Branch: "ql3"}
}

// systemRefusals names, per item of QingLong's system routes, why ql3
// does not serve it.
var systemRefusals = map[string]string{
	"config":               "ql3 is configured by its flags and config file, not at run time",
	"update-check":         "ql3 is updated by replacing its binary; it never updates itself",
	"update":               "ql3 is updated by replacing its binary; it never updates itself",
	"reload":               "restart the service instead",
	"notify":               "notifications are channels of the native API (/api/v1/notify)",
	"command-run":          "ql3 runs commands only as tasks: create a cron and run it",
	"command-stop":         "ql3 runs commands only as tasks: stop the cron",
	"data":                 "export and import are the native CLI's (backup, import)",
	"log":                  "ql3's own log goes to its standard error (the service manager keeps it)",
	"auth":                 "accounts are managed through the native API (/api/v1/users)",
	"dependence-clean":     "ql3 installs no dependencies",
	"dependence-proxy":     "ql3 installs no dependencies",
	"node-mirror":          "ql3 installs no dependencies",
	"python-mirror":        "ql3 installs no dependencies",
	"linux-mirror":         "ql3 installs no dependencies",
	"timezone":             "each trigger has its own time zone; the Open API's crons use --open-time-zone",
	"lang":                 "the panel's language is each browser's choice",
	"panel-title":          "the panel's title is fixed",
	"global-ssh-key":       "ql3 keeps no SSH keys",
	"log-remove-frequency": "log retention is a flag (ADR 0042)",
	"cron-concurrency":     "concurrency is set per task",
}

// SystemRefusal is the message for a system item ql3 does not serve: the
// most specific named segment wins (config/timezone → timezone).
func SystemRefusal(method, path string) string {
	segs := strings.Split(strings.Trim(strings.TrimPrefix(path, "/open/system/"), "/"), "/")
	why := ""
	for _, seg := range segs {
		if w, ok := systemRefusals[seg]; ok {
			why = w
		}
	}
	if why == "" {
		why = "not part of QingLong's system API as ql3 maps it (ADR 0057)"
	}
	return "ql3 does not serve " + method + " " + path + ": " + why
}
