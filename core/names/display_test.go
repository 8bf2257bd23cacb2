package names

import (
	"strings"
	"testing"
)

func TestCheckDisplayAccepts(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"backup-db", "backup-db"},
		{strings.Repeat("京", 50), strings.Repeat("京", 50)},
		{strings.Repeat("签", 128), strings.Repeat("签", 128)},
		{"京东签到 Cookie", "京东签到 Cookie"},
		{"日次バックアップ", "日次バックアップ"},
		{"早安　世界", "早安　世界"}, // ideographic space between words
		{"🚀 deploy", "🚀 deploy"},
		{"❤️ daily", "❤️ daily"},         // VS16 after a symbol
		{"👨‍👩‍👧 family", "👨‍👩‍👧 family"}, // ZWJ between symbols
		{"1️⃣ first", "1️⃣ first"},       // keycap
		{"👍🏻 ok", "👍🏻 ok"},               // skin tone modifier
		{"café", "café"},
		{"cafe\u0301", "café"}, // NFD in, NFC out
		{"Ελληνικά", "Ελληνικά"},
		{"Привет мир", "Привет мир"},
		{"hello мир", "hello мир"}, // scripts may differ between words
		{"Ünïcödé", "Ünïcödé"},
	} {
		got, err := CheckDisplay("name", tc.in)
		if err != nil {
			t.Errorf("CheckDisplay(%q) = %v, want ok", tc.in, err)
			continue
		}
		if got != tc.want {
			t.Errorf("CheckDisplay(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestCheckDisplayRefuses(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", "name: must be 1..128 characters, got 0"},
		{strings.Repeat("签", 129), "name: must be 1..128 characters, got 129"},
		{strings.Repeat("a", 129), "name: must be 1..128 characters, got 129"},
		{"hel\u200blo", "invisible characters (U+200B"},
		{"hel\u2060lo", "invisible characters (U+2060"},
		{"hello\u00a0world", "invisible characters (U+00A0"},
		{"soft\u00adhyphen", "invisible characters (U+00AD"},
		{"a\ufe0fb", "invisible characters (U+FE0F"},
		{"a\u200db", "invisible characters (U+200D"},
		{"x\u3164y", "invisible characters (U+3164"},
		{"hell\u043e", "must not mix Latin and Cyrillic letters"},  // Cyrillic о
		{"\u0440aypal", "must not mix Cyrillic and Latin letters"}, // Cyrillic р
		{"p\u03b1ypal", "must not mix Latin and Greek letters"},    // Greek α
		{"ab\u202ecd", "bidirectional"},
		{"a\x00b", "control"},
		{"a\xffb", "UTF-8"},
		{"01a22f0f-2e41-73b9-b6c3-069d9bde2cbb", "id"},
	} {
		_, err := CheckDisplay("name", tc.in)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("CheckDisplay(%q) = %v, want an error containing %q", tc.in, err, tc.want)
		}
	}
}

// TestCheckDisplaySameAfterNormalization: the NFC and NFD spellings of one
// name normalise to the same string, so a store's uniqueness check sees a
// duplicate, not a second name that looks identical.
func TestCheckDisplaySameAfterNormalization(t *testing.T) {
	a, errA := CheckDisplay("name", "caf\u00e9")
	b, errB := CheckDisplay("name", "cafe\u0301")
	if errA != nil || errB != nil || a != b {
		t.Fatalf("NFC %q (%v) and NFD %q (%v) must normalise to one name", a, errA, b, errB)
	}
}

func FuzzCheckDisplay(f *testing.F) {
	for _, s := range []string{"backup", "京东签到", "cafe\u0301", "hell\u043e", "👨‍👩‍👧", "a\u200bb", "\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := CheckDisplay("name", s)
		if err != nil {
			return
		}
		// Accepted names are stable: checking the stored form again gives
		// the same name (idempotent normalisation, no rule depends on form).
		again, err := CheckDisplay("name", got)
		if err != nil || again != got {
			t.Fatalf("CheckDisplay(%q) = %q, but CheckDisplay of that = %q, %v", s, got, again, err)
		}
	})
}
