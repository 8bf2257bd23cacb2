package qlimport

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"sort"
	"time"

	"github.com/ql3/ql3/core/canonjson"
	"github.com/ql3/ql3/core/errs"
)

// PlanVersion names the plan format; it is part of the digest.
const PlanVersion = "ql3.import.plan/v1"

// DigestDomain separates plan digests from every other digest.
const DigestDomain = "ql3/import-plan/v1"

// Plan is the result of inspect: what apply will do, row by row.
type Plan struct {
	Version       string                   `json:"version"`
	Zone          string                   `json:"zone"`
	Tasks         []TaskPlan               `json:"tasks"`
	Envs          []EnvPlan                `json:"envs"`
	ConfigDrafts  []EnvDraft               `json:"configDrafts"`
	Subscriptions []SubscriptionPlan       `json:"subscriptions"`
	Dependencies  []DependencyPlan         `json:"dependencies"`
	Files         []FilePlan               `json:"files"`
	Counts        map[string]map[Class]int `json:"counts"`
	// Notes are plan-wide warnings (a zone with daylight saving time).
	Notes []string `json:"notes"`
	// ValuesDigest binds the env and config values (which the plan never
	// shows) so a changed cookie changes Digest.
	ValuesDigest string `json:"valuesDigest"`
	Digest       string `json:"-"`
}

// Inspect builds the plan of src for the legacy time zone zone (required:
// QingLong's schedules are wall-clock times of the zone its host ran in,
// and ql3 never guesses the host's).
//
// checks are the target's own rules for records the plan maps (a
// subscription, a dependency): a row that passes the plan's rules but not
// the target's goes to manual action with the target's reason, so apply
// never meets a row it cannot write.
func Inspect(src Source, zone string, checks ...Checks) (Plan, error) {
	if zone == "" {
		return Plan{}, errs.Invalidf("zone", "is required: name the time zone QingLong ran in (e.g. Asia/Shanghai)")
	}
	loc, err := time.LoadLocation(zone)
	if err != nil || zone == "Local" {
		return Plan{}, errs.Invalidf("zone", "must be an IANA time zone such as Asia/Shanghai, got %q", zone)
	}
	p := Plan{
		Version:       PlanVersion,
		Zone:          zone,
		Tasks:         planTasks(src.Crontabs, loc),
		Envs:          planEnvs(src.Envs),
		ConfigDrafts:  planDrafts(src.ConfigExports),
		Subscriptions: planSubscriptions(src.Subscriptions, loc),
		Dependencies:  planDependencies(src.Dependences),
		Files:         planFiles(src.Files),
		ValuesDigest:  valuesDigest(src),
	}
	checkScriptFiles(p.Tasks, p.Files)
	for _, c := range checks {
		c.apply(&p)
	}
	p.Notes = []string{}
	if observesDST(loc) {
		p.Notes = append(p.Notes, fmt.Sprintf("%s observes daylight saving time: on the two change days a year, "+
			"a time inside the skipped hour fires at the end of the gap in ql3 (QingLong fired it an hour later), and "+
			"step schedules across the change follow ql3's wall-clock rules; every other day fires at the same instants", zone))
	}
	p.Counts = map[string]map[Class]int{"tasks": {}, "envs": {}, "configDrafts": {}, "subscriptions": {}, "dependencies": {}, "files": {}}
	for _, t := range p.Tasks {
		p.Counts["tasks"][t.Class]++
	}
	for _, e := range p.Envs {
		p.Counts["envs"][e.Class]++
	}
	for _, d := range p.ConfigDrafts {
		p.Counts["configDrafts"][d.Class]++
	}
	for _, s := range p.Subscriptions {
		p.Counts["subscriptions"][s.Class]++
	}
	for _, d := range p.Dependencies {
		p.Counts["dependencies"][d.Class]++
	}
	for _, f := range p.Files {
		p.Counts["files"][f.Class]++
	}
	canonical, err := canonjson.Canonical(p)
	if err != nil {
		return Plan{}, err
	}
	p.Digest = canonjson.Sum(DigestDomain, canonical).String()
	return p, nil
}

// valuesDigest hashes every env and config value with its row identity,
// framed by lengths, in a fixed order.
func valuesDigest(src Source) string {
	envs := append([]Env(nil), src.Envs...)
	sort.Slice(envs, func(i, j int) bool { return envs[i].ID < envs[j].ID })
	h := sha256.New()
	frame := func(kind byte, id int64, s string) {
		var hdr [17]byte
		hdr[0] = kind
		binary.BigEndian.PutUint64(hdr[1:9], uint64(id))
		binary.BigEndian.PutUint64(hdr[9:], uint64(len(s)))
		h.Write(hdr[:])
		h.Write([]byte(s))
	}
	for _, e := range envs {
		frame('e', e.ID, e.Value)
	}
	for _, c := range src.ConfigExports {
		frame('c', int64(c.Line), c.Value)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// checkScriptFiles sends a script task whose file apply would not copy
// (missing, or refused) to manual action: created, it could only fail.
func checkScriptFiles(tasks []TaskPlan, files []FilePlan) {
	copied := make(map[string]bool, len(files))
	for _, f := range files {
		if f.Copied() && !f.Dir {
			copied[f.Path] = true
		}
	}
	for i := range tasks {
		t := &tasks[i]
		if t.Script == nil || copied[t.Script.File] {
			continue
		}
		t.Class = RequiresManual
		t.Reasons = append(t.Reasons, fmt.Sprintf("scripts/%s is not copied (missing from the scripts folder, or refused): the task could only fail", t.Script.File))
		t.Kind, t.Script = "", nil
	}
}

// observesDST reports whether loc changes its UTC offset in the years
// 2020–2040 (a fixed span: the plan is a function of its inputs only).
func observesDST(loc *time.Location) bool {
	for y := 2020; y <= 2040; y++ {
		_, jan := time.Date(y, 1, 1, 12, 0, 0, 0, loc).Zone()
		_, jul := time.Date(y, 7, 1, 12, 0, 0, 0, loc).Zone()
		if jan != jul {
			return true
		}
	}
	return false
}

// Checks are a target's rules for mapped records (nil: none).
type Checks struct {
	Subscription func(SubscriptionPlan) error
	Dependency   func(DependencyPlan) error
}

func (c Checks) apply(p *Plan) {
	for i := range p.Subscriptions {
		s := &p.Subscriptions[i]
		if c.Subscription != nil && s.Created() {
			if err := c.Subscription(*s); err != nil {
				s.Class, s.Reasons = RequiresManual, append(s.Reasons, "ql3 refuses it: "+err.Error())
			}
		}
	}
	for i := range p.Dependencies {
		d := &p.Dependencies[i]
		if c.Dependency != nil && d.Created() {
			if err := c.Dependency(*d); err != nil {
				d.Class, d.Reasons = RequiresManual, append(d.Reasons, "ql3 refuses it: "+err.Error())
			}
		}
	}
}
