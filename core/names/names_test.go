package names

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/ql3/ql3/core/errs"
)

func TestCheck(t *testing.T) {
	ok := []string{"hello", "backup-db", "日次バックアップ", "a b", " x", "Ünïcödé", "0123456789abcdef", "café", "e\u0301",
		"0123456789abcdef0123456789abcdeg", "01a22f0f-2e41-73b9-b6c3-069d9bde2cb"}
	for _, n := range ok {
		if err := Check("name", n); err != nil {
			t.Errorf("Check(%q) = %v, want ok", n, err)
		}
	}
	bad := []struct{ name, why string }{
		{"", "visible"},
		{"   ", "visible"},
		{"\t\n", "control"},
		{"\u200b", "visible"}, // zero-width space
		{"\u200b\u200c\u200d\u2060", "visible"},
		{"\ufeff", "visible"},              // BOM
		{"\u3000", "visible"},              // ideographic space
		{"\u0301", "visible"},              // a lone combining mark
		{"\u3164", "visible"},              // Hangul filler
		{"\u2800", "visible"},              // braille blank
		{"abc\u202edcba", "bidirectional"}, // RLO
		{"\u2066x\u2069", "bidirectional"},
		{"x\u200f", "bidirectional"},
		{"x\u061c", "bidirectional"},
		{"a\x00b", "control"},
		{"a\x7fb", "control"},
		{"a\u0085b", "control"},
		{"a\xffb", "UTF-8"},
		{"a\ufffdb", "U+FFFD"},
		{"01a22f0f-2e41-73b9-b6c3-069d9bde2cbb", "id"},
		{"01A22F0F-2E41-73B9-B6C3-069D9BDE2CBB", "id"},
		{"01a22f0f2e4173b9b6c3069d9bde2cbb", "id"},
		{"{01a22f0f-2e41-73b9-b6c3-069d9bde2cbb}", "id"},
		{"urn:uuid:01a22f0f-2e41-73b9-b6c3-069d9bde2cbb", "id"},
	}
	for _, b := range bad {
		err := Check("name", b.name)
		if err == nil || errs.Field(err) != "name" || !strings.Contains(err.Error(), b.why) {
			t.Errorf("Check(%q) = %v, want a %s error naming the field", b.name, err, b.why)
		}
	}
}

func FuzzCheck(f *testing.F) {
	for _, s := range []string{"hello", " ", "\u202e", "01a22f0f-2e41-73b9-b6c3-069d9bde2cbb", "\u200b", "a\xff", "{00000000-0000-0000-0000-000000000000}"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if Check("name", s) != nil {
			return
		}
		if !utf8.ValidString(s) || LooksLikeID(s) {
			t.Fatalf("accepted %q", s)
		}
		visible := false
		for _, r := range s {
			if IsBidiControl(r) || r < 0x20 {
				t.Fatalf("accepted %q with %U", s, r)
			}
			visible = visible || isVisible(r)
		}
		if !visible {
			t.Fatalf("accepted %q without a visible character", s)
		}
	})
}
