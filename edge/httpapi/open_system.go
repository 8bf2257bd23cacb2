package httpapi

import (
	"net/http"
	"strings"

	"github.com/ql3/ql3/httpkit"
)

// QingLong's /open/system (back/api/system.ts) where it maps onto ql3
// (ADR 0057): GET /open/system answers its shape with ql3's version.
// Every other item is refused one by one with QingLong's 404 shape and
// the reason, so a tool learns what ql3 does instead.

// OpenSystem is data of GET /open/system.
type OpenSystem struct {
	IsInitialized bool   `json:"isInitialized"`
	Version       string `json:"version"`
	PublishTime   int64  `json:"publishTime"`
	Branch        string `json:"branch"`
	ChangeLog     string `json:"changeLog"`
	ChangeLogLink string `json:"changeLogLink"`
}

// openSystemRefusals names, per item of QingLong's system routes, why
// ql3 does not serve it.
var openSystemRefusals = map[string]string{
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

func (s *Server) openSystemRoutes(mux httpkit.Mux) {
	mux.HandleFunc("GET /open/system", s.withApp(func(w http.ResponseWriter, r *http.Request) {
		openOK(w, OpenSystem{IsInitialized: true, Version: s.version, Branch: "ql3"})
	}))
	mux.HandleFunc("/open/system/", s.withApp(func(w http.ResponseWriter, r *http.Request) {
		openFail(w, http.StatusNotFound, openSystemRefusal(r.Method, r.URL.Path))
	}))
}

// openSystemRefusal is the message for a system item ql3 does not serve:
// the most specific named segment wins (config/timezone → timezone).
func openSystemRefusal(method, path string) string {
	segs := strings.Split(strings.Trim(strings.TrimPrefix(path, "/open/system/"), "/"), "/")
	why := ""
	for _, seg := range segs {
		if w, ok := openSystemRefusals[seg]; ok {
			why = w
		}
	}
	if why == "" {
		why = "not part of QingLong's system API as ql3 maps it (ADR 0057)"
	}
	return "ql3 does not serve " + method + " " + path + ": " + why
}
