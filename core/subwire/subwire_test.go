package subwire

import (
	"encoding/json"
	"testing"

	"github.com/ql3/ql3/core/subdef"
	"github.com/ql3/ql3/core/subplan"
)

func TestDefSwitchesDefaultOnAndFieldsCarryOver(t *testing.T) {
	off := false
	cases := []struct {
		name string
		body string
		want subdef.Def
	}{
		{"switches left out are on", `{"name":"n","kind":"git","url":"https://e.example/r.git"}`,
			subdef.Def{Name: "n", Kind: "git", URL: "https://e.example/r.git", AutoAdd: true, AutoRemove: true, Enabled: true}},
		{"every field", `{"name":"n","slug":"s","kind":"git","url":"u","branch":"main","credential":"TOK","credentialKind":"https_token",
			"include":["a"],"exclude":["b"],"extensions":["js"],"schedule":"0 * * * *","autoAddTasks":false,"autoRemoveTasks":false,
			"removeMode":"disable","defaultCron":"1 2 * * *","proxy":"http://p:1","timeZone":"Asia/Shanghai","enabled":false}`,
			subdef.Def{Name: "n", Slug: "s", Kind: "git", URL: "u", Branch: "main", Credential: "TOK", CredentialKind: "https_token",
				Filter: subplan.Filter{Include: []string{"a"}, Exclude: []string{"b"}, Extensions: []string{"js"}}, Schedule: "0 * * * *",
				AutoAdd: off, AutoRemove: off, RemoveMode: "disable", DefaultCron: "1 2 * * *", Proxy: "http://p:1",
				TimeZone: "Asia/Shanghai", Enabled: off}},
	}
	for _, c := range cases {
		var r SubscriptionRequest
		if err := json.Unmarshal([]byte(c.body), &r); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		got, _ := json.Marshal(r.Def())
		want, _ := json.Marshal(c.want)
		if string(got) != string(want) {
			t.Errorf("%s:\n got %s\nwant %s", c.name, got, want)
		}
	}
}
