package qlimport

import (
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/ql3/ql3/core/cron"
	"github.com/ql3/ql3/core/scriptpath"
	"github.com/ql3/ql3/core/subdef"
	"github.com/ql3/ql3/core/subplan"
)

// SubscriptionPlan is what one Subscriptions row becomes.
type SubscriptionPlan struct {
	SourceID   int64    `json:"sourceId"`
	Class      Class    `json:"class"`
	Reasons    []string `json:"reasons,omitempty"`
	Name       string   `json:"name"`
	Folder     string   `json:"folder"` // scripts/<folder>
	Kind       string   `json:"kind"`   // git | file
	URL        string   `json:"url"`
	Branch     string   `json:"branch,omitempty"`
	Schedule   string   `json:"schedule,omitempty"`
	Include    []string `json:"include,omitempty"` // globs
	Exclude    []string `json:"exclude,omitempty"`
	Extensions []string `json:"extensions,omitempty"`
	AutoAdd    bool     `json:"autoAddTasks"`
	AutoRemove bool     `json:"autoRemoveTasks"`
	Enabled    bool     `json:"enabled"`
	Proxy      string   `json:"proxy,omitempty"`
}

// Created reports whether apply creates the subscription.
func (s SubscriptionPlan) Created() bool { return s.Class == Lossless || s.Class == RequiresShell }

// scpLike is git's user@host:path form of an SSH repository.
var scpLike = regexp.MustCompile(`^[A-Za-z0-9_.-]+@[A-Za-z0-9.-]+:[^/]`)

// literalAlternation is an egrep pattern that is only words joined by '|':
// QingLong's usual whitelist "jd_|jx_|gua_"; each word becomes a glob.
var literalAlternation = regexp.MustCompile(`^[A-Za-z0-9_\-/]+(\|[A-Za-z0-9_\-/]+)*$`)

func planSubscriptions(rows []Subscription, loc *time.Location) []SubscriptionPlan {
	out := make([]SubscriptionPlan, 0, len(rows))
	for _, r := range rows {
		v := verdict{class: Lossless}
		p := SubscriptionPlan{SourceID: r.ID, Name: strings.TrimSpace(r.Name), URL: strings.TrimSpace(r.URL),
			Branch: strings.TrimSpace(r.Branch), AutoAdd: r.AutoAddCron, AutoRemove: r.AutoDelCron,
			Enabled: !r.IsDisabled, Proxy: strings.TrimSpace(r.Proxy), Kind: "git"}
		if r.Type == "file" {
			p.Kind = "file"
		}
		if p.Name == "" {
			p.Name = fmt.Sprintf("Legacy Subscription %d", r.ID)
		}
		folder := strings.TrimSpace(r.Alias)
		if folder == "" {
			folder = fmt.Sprintf("subscription_%d", r.ID)
		}
		if f, err := scriptpath.Clean("alias", folder, false); err != nil || strings.Contains(f, "/") {
			v.add(RequiresManual, "alias %q is not a single folder name", folder)
		} else {
			p.Folder = f
		}
		if !scpLike.MatchString(p.URL) {
			if u, err := url.Parse(p.URL); err != nil || u.Host == "" {
				v.add(Malformed, "url %q is not a repository or file URL", p.URL)
			}
		}
		switch r.ScheduleType {
		case "interval":
			v.add(RequiresManual, "an interval schedule: write it as a cron expression")
		default:
			s := strings.Join(strings.Fields(r.Schedule), " ")
			if _, err := cron.Parse(s, loc); err != nil {
				v.add(Malformed, "schedule %q does not parse: %v", s, err)
			} else {
				p.Schedule = s
			}
		}
		var ok bool
		if p.Include, ok = globsOf(r.Whitelist); !ok {
			v.add(RequiresManual, "whitelist %q is a regular expression: ql3 filters with globs", r.Whitelist)
		}
		if p.Exclude, ok = globsOf(r.Blacklist); !ok {
			v.add(RequiresManual, "blacklist %q is a regular expression: ql3 filters with globs", r.Blacklist)
		}
		for _, e := range strings.FieldsFunc(r.Extensions, func(c rune) bool { return c == ' ' || c == '|' || c == ',' }) {
			p.Extensions = append(p.Extensions, "."+strings.TrimPrefix(e, "."))
		}
		if strings.TrimSpace(r.SubBefore) != "" || strings.TrimSpace(r.SubAfter) != "" {
			v.add(RequiresManual, "sub_before/sub_after shell hooks: ql3 subscriptions run no hooks")
		}
		if r.HasCredential {
			v.add(RequiresManual, "a private repository: enter its key or token in ql3 (credentials are not copied)")
		}
		p.Class, p.Reasons = v.class, v.reasons
		out = append(out, p)
	}
	return out
}

// globsOf maps a QingLong egrep filter to globs when it is a plain
// alternation of words (each word matches anywhere in the path).
func globsOf(pattern string) ([]string, bool) {
	pattern = strings.TrimSpace(pattern)
	if pattern == "" {
		return nil, true
	}
	if !literalAlternation.MatchString(pattern) {
		return nil, false
	}
	var out []string
	for _, w := range strings.Split(pattern, "|") {
		out = append(out, "*"+w+"*")
	}
	return out, true
}

// DependencyPlan is what one Dependences row becomes.
type DependencyPlan struct {
	SourceID int64    `json:"sourceId"`
	Class    Class    `json:"class"`
	Reasons  []string `json:"reasons,omitempty"`
	Kind     string   `json:"kind"` // node | python | linux
	Name     string   `json:"name"`
	Version  string   `json:"version,omitempty"`
}

// Created reports whether apply records the dependency.
func (d DependencyPlan) Created() bool { return d.Class == Lossless }

var packageName = regexp.MustCompile(`^(@[a-z0-9][a-z0-9._~-]*/)?[A-Za-z0-9][A-Za-z0-9._+~-]*$`)

func planDependencies(rows []Dependence) []DependencyPlan {
	out := make([]DependencyPlan, 0, len(rows))
	for _, r := range rows {
		v := verdict{class: Lossless}
		p := DependencyPlan{SourceID: r.ID}
		name := strings.TrimSpace(r.Name)
		switch r.Type {
		case 0:
			p.Kind = "node"
			// name@version; a scoped name starts with '@'.
			if i := strings.LastIndexByte(name, '@'); i > 0 {
				name, p.Version = name[:i], name[i+1:]
			}
		case 1:
			p.Kind = "python"
			for _, sep := range []string{"==", "="} {
				if n, ver, ok := strings.Cut(name, sep); ok {
					name, p.Version = n, ver
					break
				}
			}
		case 2:
			p.Kind = "linux"
		default:
			v.add(Malformed, "unknown dependency type %d (0 nodejs, 1 python3, 2 linux)", r.Type)
		}
		p.Name = name
		switch {
		case name == "":
			v.add(Malformed, "empty package name")
		case strings.ContainsAny(name, " \t"):
			v.add(RequiresManual, "%q names several packages: add them one by one", name)
		case !packageName.MatchString(name):
			v.add(RequiresManual, "%q is not a package name ql3 accepts", name)
		}
		if strings.ContainsAny(p.Version, " \t;&|$`") {
			v.add(RequiresManual, "version %q is not a plain version", p.Version)
		}
		p.Class, p.Reasons = v.class, v.reasons
		out = append(out, p)
	}
	return out
}

// SubscriptionDef is the subscription record a created plan row becomes
// on either binary: its pulls and its tasks' triggers in the legacy zone,
// no credential (private repositories are manual), removals disabling
// tasks.
func SubscriptionDef(s SubscriptionPlan, zone string) subdef.Def {
	return subdef.Def{Name: s.Name, Slug: s.Folder, Kind: s.Kind, URL: s.URL, Branch: s.Branch,
		Filter:   subplan.Filter{Include: s.Include, Exclude: s.Exclude, Extensions: s.Extensions},
		Schedule: s.Schedule, AutoAdd: s.AutoAdd, AutoRemove: s.AutoRemove, Proxy: s.Proxy, TimeZone: zone, Enabled: s.Enabled}
}
