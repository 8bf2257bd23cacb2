package names

import (
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"

	"github.com/ql3/ql3/core/errs"
)

// MaxDisplayChars is the length limit of every user-visible name (tasks,
// projects, triggers, workers, tokens, env entries' labels) on both
// binaries. It counts characters (code points after NFC), never bytes: a
// 50-character Chinese name is as valid on the edge as on the cluster.
const MaxDisplayChars = 128

// CheckDisplay is the one rule for a user-visible name on every binary. It
// returns the name in Unicode Normalization Form C, which is what callers
// store and compare: "café" typed as e + U+0301 (NFD) and as U+00E9 (NFC)
// are then the same name, so the second is a duplicate, not a lookalike.
//
// On top of Check (valid UTF-8, no control or bidirectional characters,
// something visible, not id-shaped) it refuses, naming field:
//   - a length outside 1..MaxDisplayChars characters;
//   - invisible characters anywhere (zero-width space and the other format
//     characters, fillers, variation selectors, space characters that look
//     like a space but are not one). Two exceptions keep emoji names
//     working: U+200D ZERO WIDTH JOINER between two symbols (👨‍👩‍👧) and a
//     variation selector after a symbol or before U+20E3 (❤️, 1️⃣);
//   - a word that mixes Latin, Greek and Cyrillic letters ("hellо" with a
//     Cyrillic о): those three scripts share look-alike letters, so a
//     mixed word is the classic spoof. Other mixes (中文abc, 京东Cookie) are
//     ordinary and allowed. A word is a maximal run of letters and marks.
//
// This is deliberately a small rule, not Unicode's full confusable
// skeleton (UTS #39): it catches the spoofs a person can type by accident
// or on purpose in a panel, and it never refuses an ordinary name.
func CheckDisplay(field, name string) (string, error) {
	if !utf8.ValidString(name) {
		return "", errs.Invalidf(field, "is not valid UTF-8")
	}
	name = norm.NFC.String(name)
	if n := utf8.RuneCountInString(name); n < 1 || n > MaxDisplayChars {
		return "", errs.Invalidf(field, "must be 1..%d characters, got %d", MaxDisplayChars, n)
	}
	if err := Check(field, name); err != nil {
		return "", err
	}
	if err := checkInvisible(field, name); err != nil {
		return "", err
	}
	if err := checkMixedScript(field, name); err != nil {
		return "", err
	}
	return name, nil
}

// checkInvisible refuses characters that render as nothing (or as a plain
// space) inside a name, so two names that look the same are the same.
func checkInvisible(field, name string) error {
	prev := rune(-1)
	for i, r := range name {
		next, _ := utf8.DecodeRuneInString(name[i+utf8.RuneLen(r):])
		if isInvisible(r) && !emojiGlue(prev, r, next) {
			return errs.Invalidf(field, "must not contain invisible characters (U+%04X at byte %d): the name would look like another one", r, i)
		}
		prev = r
	}
	return nil
}

func isInvisible(r rune) bool {
	switch {
	case unicode.Is(unicode.Cf, r): // ZWSP, ZWNJ, ZWJ, word joiner, BOM, soft hyphen, tags…
		return true
	case unicode.Is(unicode.Zs, r) && r != ' ' && r != 0x3000: // NBSP, en/em/thin spaces look like ' '
		return true
	case r >= 0xFE00 && r <= 0xFE0F, r >= 0xE0100 && r <= 0xE01EF: // variation selectors
		return true
	}
	switch r {
	case 0x034F, 0x115F, 0x1160, 0x17B4, 0x17B5, 0x180B, 0x180C, 0x180D, 0x180E, 0x180F,
		0x3164, 0xFFA0, 0x2800:
		return true
	}
	return false
}

// emojiGlue reports the invisible characters emoji need: a joiner between
// two symbols, a variation selector after a symbol or before a keycap.
func emojiGlue(prev, r, next rune) bool {
	symbol := func(c rune) bool { return c >= 0 && (unicode.Is(unicode.So, c) || unicode.Is(unicode.Sk, c)) }
	switch {
	case r == 0x200D:
		return symbol(prev) && symbol(next)
	case r == 0xFE0E || r == 0xFE0F:
		return symbol(prev) || next == 0x20E3
	}
	return false
}

// confusableScripts share look-alike letters (a/а/α, o/о/ο, p/р/ρ …).
var confusableScripts = []*unicode.RangeTable{unicode.Latin, unicode.Greek, unicode.Cyrillic}

var confusableNames = []string{"Latin", "Greek", "Cyrillic"}

// checkMixedScript refuses a word whose letters come from more than one of
// the confusable scripts.
func checkMixedScript(field, name string) error {
	seen := -1 // index into confusableScripts of the current word's script
	for i, r := range name {
		if !unicode.IsLetter(r) && !unicode.Is(unicode.M, r) {
			seen = -1 // a word ends at anything that is not a letter or mark
			continue
		}
		for s, table := range confusableScripts {
			if !unicode.Is(table, r) {
				continue
			}
			if seen >= 0 && seen != s {
				return errs.Invalidf(field, "must not mix %s and %s letters in one word (U+%04X at byte %d): the name would look like another one",
					confusableNames[seen], confusableNames[s], r, i)
			}
			seen = s
		}
	}
	return nil
}
