package qlimport

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
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
	// ValuesDigest binds the env and config values (which the plan never
	// shows) so a changed cookie changes Digest.
	ValuesDigest string `json:"valuesDigest"`
	Digest       string `json:"-"`
}

// Inspect builds the plan of src for the legacy time zone zone (required:
// QingLong's schedules are wall-clock times of the zone its host ran in,
// and ql3 never guesses the host's).
func Inspect(src Source, zone string) (Plan, error) {
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
