package edge

import (
	"strings"
	"testing"

	"github.com/ql3/ql3/core/canonjson"
	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/spec"
)

func validSpec() spec.Command {
	return spec.Command{Kind: spec.KindCommandV1, Argv: &spec.Argv{File: "true"}}.WithDefaults()
}

// TestCheckNewTask: every rule of a task creation, each reported on its
// field, in one function the store calls once.
func TestCheckNewTask(t *testing.T) {
	ok := NewTask{Name: strings.Repeat("日", 50), Spec: validSpec(), Enabled: true,
		Triggers: []TriggerInput{{Expression: "*/5 * * * *"}, {Expression: "*/5 * * * *", TimeZone: "Asia/Tokyo"}}}
	v, err := CheckNewTask(ok)
	if err != nil {
		t.Fatal(err)
	}
	if v.Name != ok.Name || len(v.Spec.Canonical) == 0 || v.Spec.Digest == (canonjson.Digest{}) || v.Triggers[0].TimeZone != "UTC" ||
		v.Triggers[0].GraceMs == 0 || v.Triggers[0].Misfire == "" {
		t.Fatalf("valid task %+v", v)
	}
	if d, _ := ok.Spec.Digest(); d != v.Spec.Digest {
		t.Fatalf("digest %v, spec.Digest %v", v.Spec.Digest, d)
	}
	many := make([]TriggerInput, MaxTriggersPerTask+1)
	for i := range many {
		many[i] = TriggerInput{Expression: "* * * * *"}
	}
	badSpec := validSpec()
	badSpec.TimeoutMs = -1
	for _, c := range []struct {
		name  string
		in    NewTask
		code  string
		field string
	}{
		{"129 characters", NewTask{Name: strings.Repeat("日", 129), Spec: validSpec()}, errs.Invalid, "name"},
		{"empty name", NewTask{Name: "", Spec: validSpec()}, errs.Invalid, "name"},
		{"id-shaped name", NewTask{Name: "01a22f0f-2e41-73b9-b6c3-069d9bde2cbb", Spec: validSpec()}, errs.Invalid, "name"},
		{"bad spec", NewTask{Name: "a", Spec: badSpec}, errs.Invalid, "spec.timeoutMs"},
		{"too many triggers", NewTask{Name: "a", Spec: validSpec(), Triggers: many}, errs.TooLarge, "triggers"},
		{"no expression", NewTask{Name: "a", Spec: validSpec(), Triggers: []TriggerInput{{}}}, errs.Invalid, "triggers[0].expression"},
		{"bad zone", NewTask{Name: "a", Spec: validSpec(), Triggers: []TriggerInput{{Expression: "* * * * *"}, {Expression: "* * * * *", TimeZone: "Mars/Base"}}}, errs.Invalid, "triggers[1].timeZone"},
		{"same schedule twice", NewTask{Name: "a", Spec: validSpec(), Triggers: []TriggerInput{{Expression: "0 * * * *"}, {Expression: "0  * * * *", TimeZone: "UTC"}}}, errs.Conflict, "triggers[1].expression"},
	} {
		_, err := CheckNewTask(c.in)
		if errs.Code(err) != c.code || errs.Field(err) != c.field {
			t.Errorf("%s: %v; want %s on %s", c.name, err, c.code, c.field)
		}
	}
}

func TestCheckTaskUpdateAndLookupName(t *testing.T) {
	name, cs, err := CheckTaskUpdate(TaskUpdate{Name: "🚀 deploy", Spec: validSpec()})
	if err != nil || name != "🚀 deploy" || cs.Digest == (canonjson.Digest{}) {
		t.Fatalf("update: %q %v %v", name, cs.Digest, err)
	}
	if _, _, err := CheckTaskUpdate(TaskUpdate{Name: "a\u202eb", Spec: validSpec()}); errs.Field(err) != "name" {
		t.Fatalf("bidi name: %v", err)
	}
	if got := LookupName("01a22f0f-2e41-73b9-b6c3-069d9bde2cbb"); got != "01a22f0f-2e41-73b9-b6c3-069d9bde2cbb" {
		t.Fatalf("an id is looked up as given, got %q", got)
	}
}

// TestTaskNamesNormalized: a name is stored in NFC, so the decomposed and
// the composed spelling of one name are the same name; a word mixing
// Latin and Cyrillic look-alikes is refused.
func TestTaskNamesNormalized(t *testing.T) {
	nfd, nfc := "cafe\u0301", "caf\u00e9"
	v, err := CheckNewTask(NewTask{Name: nfd, Spec: validSpec()})
	if err != nil || v.Name != nfc {
		t.Fatalf("CheckNewTask(NFD) name %q, %v; want %q", v.Name, err, nfc)
	}
	if got := LookupName(nfd); got != nfc {
		t.Fatalf("LookupName(NFD) = %q, want %q", got, nfc)
	}
	if _, err := CheckTaskName("hell\u043e"); errs.Field(err) != "name" {
		t.Fatalf("Latin+Cyrillic word: %v", err)
	}
}
