package openapi

import (
	"encoding/json"
	"reflect"
	"testing"
)

type inner struct {
	N int `json:"n"`
}

type Base struct {
	ID string `json:"id"`
}

type Thing struct {
	Base
	Name    string            `json:"name"`
	Note    string            `json:"note,omitempty"`
	Flag    *bool             `json:"flag"`
	Tags    []string          `json:"tags"`
	Labels  map[string]string `json:"labels,omitempty"`
	Inner   *inner            `json:"inner,omitempty"`
	Raw     json.RawMessage   `json:"raw,omitempty"`
	Skipped string            `json:"-"`
	hidden  int
}

type Page[T any] struct {
	Items []T `json:"items"`
}

func TestDocumentSchemas(t *testing.T) {
	g := &Generator{Title: "t", Version: "v1", Enums: map[string][]string{"Thing.name": {"a", "b"}}}
	b, err := g.Document([]Route{
		{Method: "GET", Path: "/things/{id}", Summary: "one", Params: []Param{{Name: "id", In: "path", Type: "string"}},
			Responses: map[int]Response{200: {Description: "ok", Body: Page[Thing]{}}, 204: {Description: "none"}}},
		{Method: "POST", Path: "/things", Summary: "create", Request: Thing{}, Responses: map[int]Response{201: {Description: "made", Body: Thing{}}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		OpenAPI    string `json:"openapi"`
		Components struct {
			Schemas map[string]map[string]any `json:"schemas"`
		} `json:"components"`
		Paths map[string]map[string]map[string]any `json:"paths"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.OpenAPI != "3.1.0" {
		t.Errorf("openapi %q", doc.OpenAPI)
	}
	thing := doc.Components.Schemas["Thing"]
	props := thing["properties"].(map[string]any)
	for _, name := range []string{"id", "name", "note", "flag", "tags", "labels", "inner", "raw"} {
		if _, ok := props[name]; !ok {
			t.Errorf("Thing lacks %s", name)
		}
	}
	for _, name := range []string{"Skipped", "hidden", "Base"} {
		if _, ok := props[name]; ok {
			t.Errorf("Thing has %s", name)
		}
	}
	if got := thing["required"]; !reflect.DeepEqual(got, []any{"flag", "id", "name", "tags"}) {
		t.Errorf("required %v", got)
	}
	if thing["additionalProperties"] != false {
		t.Error("unknown properties allowed")
	}
	if got := props["flag"].(map[string]any)["type"]; !reflect.DeepEqual(got, []any{"boolean", "null"}) {
		t.Errorf("flag type %v", got)
	}
	if got := props["name"].(map[string]any)["enum"]; !reflect.DeepEqual(got, []any{"a", "b"}) {
		t.Errorf("name enum %v", got)
	}
	if in, ok := doc.Components.Schemas["ThingInput"]; !ok || in["required"] != nil {
		t.Errorf("input schema %v", in)
	}
	if _, ok := doc.Components.Schemas["PageThing"]; !ok {
		t.Errorf("generic component name: %v", doc.Components.Schemas)
	}
	if op := doc.Paths["/things/{id}"]["get"]; op["operationId"] != "getThingsId" {
		t.Errorf("operationId %v", op["operationId"])
	}
	if _, err := g.Document([]Route{{Method: "GET", Path: "/x"}, {Method: "GET", Path: "/x"}}); err == nil {
		t.Error("a duplicate route was accepted")
	}
}
