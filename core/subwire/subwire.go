// Package subwire holds the JSON body that creates or replaces a
// subscription, shared by the edge (ADR 0054) and the control plane
// (ADR 0061) so both APIs take the same request and read it the same way.
package subwire

import (
	"github.com/ql3/ql3/core/subdef"
	"github.com/ql3/ql3/core/subplan"
)

// SubscriptionRequest creates or replaces a subscription. credential
// names an env store entry (of the project, on the control plane) holding
// an HTTPS token or an SSH private key; the value never travels here.
type SubscriptionRequest struct {
	Name            string   `json:"name"`
	Slug            string   `json:"slug,omitempty"`
	Kind            string   `json:"kind"`
	URL             string   `json:"url"`
	Branch          string   `json:"branch,omitempty"`
	Credential      string   `json:"credential,omitempty"`
	CredentialKind  string   `json:"credentialKind,omitempty"`
	Include         []string `json:"include,omitempty"`
	Exclude         []string `json:"exclude,omitempty"`
	Extensions      []string `json:"extensions,omitempty"`
	Schedule        string   `json:"schedule,omitempty"`
	AutoAddTasks    *bool    `json:"autoAddTasks,omitempty"`
	AutoRemoveTasks *bool    `json:"autoRemoveTasks,omitempty"`
	RemoveMode      string   `json:"removeMode,omitempty"`
	DefaultCron     string   `json:"defaultCron,omitempty"`
	Proxy           string   `json:"proxy,omitempty"`
	TimeZone        string   `json:"timeZone,omitempty"`
	Enabled         *bool    `json:"enabled,omitempty"`
}

// Def is the definition the request asks for; the three switches left
// out are on (QingLong adds and removes a subscription's tasks by default).
func (r SubscriptionRequest) Def() subdef.Def {
	on := func(b *bool) bool { return b == nil || *b }
	return subdef.Def{Name: r.Name, Slug: r.Slug, Kind: r.Kind, URL: r.URL, Branch: r.Branch,
		Credential: r.Credential, CredentialKind: r.CredentialKind,
		Filter:   subplan.Filter{Include: r.Include, Exclude: r.Exclude, Extensions: r.Extensions},
		Schedule: r.Schedule, AutoAdd: on(r.AutoAddTasks), AutoRemove: on(r.AutoRemoveTasks),
		RemoveMode: r.RemoveMode, DefaultCron: r.DefaultCron, Proxy: r.Proxy, TimeZone: r.TimeZone, Enabled: on(r.Enabled)}
}
