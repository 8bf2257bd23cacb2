package panel

import (
	"encoding/json"
	"maps"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// catalogOf decodes the catalog an asset file registers with
// P.addMessages({...}): written as strict JSON so this test can read it.
func catalogOf(t *testing.T, file string) map[string]map[string]string {
	t.Helper()
	b, err := assets.ReadFile("assets/" + file)
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(b), "P.addMessages(")
	if !ok {
		t.Fatalf("%s registers no catalog", file)
	}
	var cat map[string]map[string]string
	if err := json.NewDecoder(strings.NewReader(rest)).Decode(&cat); err != nil {
		t.Fatalf("%s: the catalog is not strict JSON: %v", file, err)
	}
	return cat
}

// usedKeys lists the literal keys a file looks up with t("key", ...).
func usedKeys(t *testing.T, file string) []string {
	t.Helper()
	b, err := assets.ReadFile("assets/" + file)
	if err != nil {
		t.Fatal(err)
	}
	// t("key", …) or a prefix of keys made at run time: t("status." + st, …).
	re := regexp.MustCompile(`\bt\("([a-zA-Z0-9_.]+)"(?:,| \+)`)
	var keys []string
	for _, m := range re.FindAllStringSubmatch(string(b), -1) {
		keys = append(keys, m[1])
	}
	return keys
}

// TestCatalogsHaveEveryKeyInBothLanguages: for each file of ours, English
// and Chinese have the same keys, no empty message, the same {placeholders},
// a Chinese message that is not the English one left untranslated (unless
// it names no words: codes, numbers), and every literal key the code
// looks up is in the catalog.
func TestCatalogsHaveEveryKeyInBothLanguages(t *testing.T) {
	placeholder := regexp.MustCompile(`\{\w+\}`)
	words := regexp.MustCompile(`[A-Za-z]{3,}`)
	for _, c := range []struct{ catalog, code string }{
		{"messages.js", "app.js"}, {"messages.js", "runs.js"}, {"overview.js", "overview.js"}, {"env.js", "env.js"},
		{"subs.js", "subs.js"}, {"import.js", "import.js"},
	} {
		cat := catalogOf(t, c.catalog)
		en, zh := cat["en"], cat["zh-CN"]
		if len(en) == 0 || len(cat) != 2 {
			t.Fatalf("%s: languages %d, English keys %d; want en and zh-CN", c.catalog, len(cat), len(en))
		}
		for k, v := range en {
			z, ok := zh[k]
			switch {
			case !ok:
				t.Errorf("%s: %s has no Chinese message", c.catalog, k)
			case v == "" || z == "":
				t.Errorf("%s: %s has an empty message", c.catalog, k)
			case !slices.Equal(sorted(placeholder.FindAllString(v, -1)), sorted(placeholder.FindAllString(z, -1))):
				t.Errorf("%s: %s placeholders differ: %q vs %q", c.catalog, k, v, z)
			case z == v && words.MatchString(v) && k != "form.shell":
				t.Errorf("%s: %s is not translated: %q", c.catalog, k, z)
			}
		}
		for k := range zh {
			if _, ok := en[k]; !ok {
				t.Errorf("%s: %s has no English message", c.catalog, k)
			}
		}
		shared := catalogOf(t, "messages.js")["en"] // page files may use app.js's status.*, error.*, …
		for _, k := range usedKeys(t, c.code) {
			if prefix, dynamic := strings.CutSuffix(k, "."); dynamic {
				if !slices.ContainsFunc(append(slices.Collect(maps.Keys(en)), slices.Collect(maps.Keys(shared))...),
					func(x string) bool { return strings.HasPrefix(x, prefix+".") }) {
					t.Errorf("%s looks up keys %s…, which no catalog has", c.code, k)
				}
				continue
			}
			if _, ok := en[k]; !ok {
				t.Errorf("%s looks up %s, which %s does not have", c.code, k, c.catalog)
			}
		}
	}
}

func sorted(s []string) []string { slices.Sort(s); return s }

// TestStaticTextIsKeyed: the page's fixed text carries catalog keys.
func TestStaticTextIsKeyed(t *testing.T) {
	b, err := assets.ReadFile("assets/index.html")
	if err != nil {
		t.Fatal(err)
	}
	en := catalogOf(t, "messages.js")["en"]
	keys := regexp.MustCompile(`data-i18n="([^"]+)">([^<]*)<`).FindAllStringSubmatch(string(b), -1)
	if len(keys) < 6 {
		t.Fatalf("index.html has %d keyed elements", len(keys))
	}
	for _, m := range keys {
		if en[m[1]] != m[2] {
			t.Errorf("index.html %s says %q, the catalog %q", m[1], m[2], en[m[1]])
		}
	}
}
