package app

import (
	"encoding/json"
	"os"
	"reflect"
	"strings"
	"testing"
)

// TestConfigFieldsDocumented: every field of the config file is listed in
// `serve --help` and in the README, so neither sends the reader to the other.
func TestConfigFieldsDocumented(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	typ := reflect.TypeOf(Config{})
	for i := range typ.NumField() {
		name, _, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ",")
		if !strings.Contains(configFileHelp, `"`+name+`"`) {
			t.Errorf("serve --help does not document config field %q", name)
		}
		if !strings.Contains(string(readme), "`"+name+"`") {
			t.Errorf("README does not document config field %q", name)
		}
	}
	// The help's example is the real shape: a file with every field decodes.
	var all = map[string]any{}
	for i := range typ.NumField() {
		name, _, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ",")
		switch typ.Field(i).Type.Kind() {
		case reflect.String:
			all[name] = "x"
		case reflect.Bool:
			all[name] = true
		default:
			all[name] = 1
		}
	}
	data, _ := json.Marshal(all)
	if _, err := DecodeConfig(data); err != nil {
		t.Fatalf("a file with every documented field: %v", err)
	}
}
