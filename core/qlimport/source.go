// Package qlimport turns the rows of a QingLong 2 data directory into an
// import plan: every row classified, mapped to what ql3 would create, and
// the whole bound by one digest. It is pure: the caller opens the source
// read-only and hands over the rows; applying the plan is the binaries'.
//
// Classes (the QL3 import records' vocabulary):
//   - lossless: ql3 runs it exactly as QingLong did;
//   - requires_shell_compatibility: it runs as a bash command whose
//     meaning depended on QingLong's shell environment (its helper
//     functions, /ql paths, task_before/task_after);
//   - requires_manual_action: ql3 cannot express it faithfully (system
//     tasks, @once/@boot, subscription-bound tasks, per-account fan-out,
//     env names QingLong never exported); listed, not created;
//   - malformed: the row itself is broken (an unparsable schedule, an
//     empty command).
package qlimport

// Class is a row's classification.
type Class string

const (
	Lossless       Class = "lossless"
	RequiresShell  Class = "requires_shell_compatibility"
	RequiresManual Class = "requires_manual_action"
	Malformed      Class = "malformed"
)

// Crontab is a row of QingLong's Crontabs table.
type Crontab struct {
	ID                     int64
	Name                   string
	Command                string
	Schedule               string
	ExtraSchedules         []string
	IsDisabled             bool
	IsSystem               bool
	Labels                 []string
	SubID                  int64 // 0 = none
	TaskBefore, TaskAfter  string
	WorkDir                string
	AllowMultipleInstances bool
}

// Env is a row of QingLong's Envs table. Status 0 = enabled (normal),
// 1 = disabled.
type Env struct {
	ID          int64
	Name        string
	Value       string
	Remarks     string
	Disabled    bool
	Position    float64
	Pinned      bool
	Labels      []string
	CreatedAtMs int64
}

// Subscription is a row of QingLong's Subscriptions table.
type Subscription struct {
	ID            int64
	Name          string
	Alias         string
	Type          string // public-repo, private-repo, file
	URL           string
	Branch        string
	Schedule      string
	ScheduleType  string // crontab, interval
	Whitelist     string // QingLong: an egrep pattern
	Blacklist     string
	Extensions    string // space or | separated
	SubBefore     string
	SubAfter      string
	HasCredential bool // pull_option carries a private key or a password
	Proxy         string
	AutoAddCron   bool
	AutoDelCron   bool
	IsDisabled    bool
}

// Dependence is a row of QingLong's Dependences table. Type 0 = nodejs,
// 1 = python3, 2 = linux.
type Dependence struct {
	ID     int64
	Name   string
	Type   int
	Remark string
}

// File is one entry of the scripts folder, as the caller saw it (lstat,
// never following a link).
type File struct {
	Path     string // relative, '/'-separated
	Size     int64
	Mode     FileMode
	Links    int    // hard links (nlink)
	Writable bool   // group- or world-writable
	SHA256   string // hex; empty for folders and refused files
}

// FileMode is what kind of entry a File is.
type FileMode string

const (
	ModeFile    FileMode = "file"
	ModeDir     FileMode = "dir"
	ModeSymlink FileMode = "symlink"
	ModeSpecial FileMode = "special" // device, socket, fifo
)

// Source is everything inspect read.
type Source struct {
	Crontabs      []Crontab
	Envs          []Env
	Subscriptions []Subscription
	Dependences   []Dependence
	Files         []File
	// ConfigExports are the simple `export NAME="value"` assignments of
	// config/config.sh (never executed), offered as env drafts.
	ConfigExports []ConfigExport
}

// ConfigExport is one simple exported assignment of config.sh.
type ConfigExport struct {
	Line  int
	Name  string
	Value string
}
