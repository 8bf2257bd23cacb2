package protocol

import (
	"strings"
	"testing"

	"github.com/ql3/ql3/core/canonjson"
	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/spec"
)

const hexA = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"

// TestScriptOfferNamesItsTree: a script task's offer must carry a tree
// digest (both decoders), another task's offer must not.
func TestScriptOfferNamesItsTree(t *testing.T) {
	o := offer(t)
	o.ScriptTree = canonjson.Sum("t", nil).String()
	if _, err := o.Encode(); errs.Field(err) != "scriptTree" {
		t.Errorf("an argv offer with a tree: %v", err)
	}
	cmd := spec.Command{Kind: spec.KindCommandV1, Script: &spec.Script{File: "a/b.js", Args: []string{"x"}}}.WithDefaults()
	o.Spec = cmd
	o.SpecDigest, _ = cmd.Digest()
	o.AttemptNumber, o.TimeoutMs = 1, 1000
	data, err := o.Encode()
	if err != nil {
		t.Fatal(err)
	}
	for name, dec := range map[string]func([]byte) (Offer, error){"fast": decodeOfferFast, "reference": decodeOfferReference} {
		got, err := dec(data)
		if err != nil || got.ScriptTree != o.ScriptTree {
			t.Errorf("%s: %q %v", name, got.ScriptTree, err)
		}
	}
	o.ScriptTree = ""
	if _, err := o.Encode(); errs.Field(err) != "scriptTree" {
		t.Errorf("a script offer without a tree: %v", err)
	}
	// A shell task's `task FILE ARGS` line may name its tree (both
	// decoders); a shell line that is not one may not.
	for line, ok := range map[string]bool{"task dir/x.js a b": true, "task x.js conc JD": false, "echo task x.js": false} {
		cmd := spec.Command{Kind: spec.KindCommandV1, Shell: &spec.Shell{Command: line}}.WithDefaults()
		o.Spec, o.ScriptTree = cmd, canonjson.Sum("t", nil).String()
		o.SpecDigest, _ = cmd.Digest()
		data, err := o.Encode()
		if !ok {
			if errs.Field(err) != "scriptTree" {
				t.Errorf("%q with a tree: %v", line, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		for name, dec := range map[string]func([]byte) (Offer, error){"fast": decodeOfferFast, "reference": decodeOfferReference} {
			if got, err := dec(data); err != nil || got.ScriptTree != o.ScriptTree {
				t.Errorf("%q %s: %q %v", line, name, got.ScriptTree, err)
			}
		}
	}
}

func TestScriptTreeMessages(t *testing.T) {
	page := ScriptTreePage{Digest: canonjson.Sum("t", nil).String(), Files: []ScriptTreeFile{
		{Path: "a.js", Size: 3, SHA256: hexA}, {Path: "lib/u.js", Size: 0, Executable: true, SHA256: hexA}}, More: true}
	data, err := page.Encode()
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeScriptTreePage(data)
	if err != nil || len(got.Files) != 2 || !got.More || !got.Files[1].Executable {
		t.Fatalf("round trip: %+v %v", got, err)
	}
	for name, f := range map[string][]ScriptTreeFile{
		"escape":    {{Path: "../x", SHA256: hexA}},
		"absolute":  {{Path: "/etc/passwd", SHA256: hexA}},
		"bad sum":   {{Path: "a", SHA256: strings.ToUpper(hexA)}},
		"unordered": {{Path: "b", SHA256: hexA}, {Path: "a", SHA256: hexA}},
		"too big":   {{Path: "a", SHA256: hexA, Size: 64<<20 + 1}},
	} {
		p := page
		p.Files = f
		if _, err := p.Encode(); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	req := ScriptBlobRequest{LeaseRef: leaseRef(), SHA256: hexA, Offset: 10, Limit: MaxScriptBlobChunk}
	data, err = req.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if back, err := DecodeScriptBlobRequest(data); err != nil || back.Offset != 10 {
		t.Fatalf("blob request: %+v %v", back, err)
	}
	req.Limit = MaxScriptBlobChunk + 1
	if _, err := req.Encode(); errs.Field(err) != "limit" {
		t.Errorf("a range past the chunk bound: %v", err)
	}
	tr := ScriptTreeRequest{LeaseRef: leaseRef(), After: "a/../b"}
	if _, err := tr.Encode(); errs.Field(err) != "after" {
		t.Errorf("after with ..: %v", err)
	}
}

func FuzzScriptTreePage(f *testing.F) {
	page, _ := ScriptTreePage{Digest: canonjson.Sum("t", nil).String(), Files: []ScriptTreeFile{{Path: "a.js", Size: 3, SHA256: hexA}}}.Encode()
	f.Add(page)
	f.Add([]byte(`{"v":1,"digest":"x","files":[]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := DecodeScriptTreePage(data)
		if err != nil {
			return
		}
		for i, file := range p.Files {
			if _, err := file.TreeFile("f"); err != nil {
				t.Fatalf("accepted file %d: %v", i, err)
			}
		}
		if _, err := p.Encode(); err != nil {
			t.Fatalf("an accepted page does not encode: %v", err)
		}
	})
}

func FuzzScriptBlobRequest(f *testing.F) {
	req, _ := ScriptBlobRequest{LeaseRef: leaseRef(), SHA256: hexA}.Encode()
	f.Add(req)
	f.Fuzz(func(t *testing.T, data []byte) {
		q, err := DecodeScriptBlobRequest(data)
		if err != nil {
			return
		}
		if q.Offset < 0 || q.Limit < 0 || q.Limit > MaxScriptBlobChunk {
			t.Fatalf("accepted %+v", q)
		}
	})
}
