// Package openapi generates OpenAPI 3.1 documents from a route table and
// the Go types the handlers encode and decode, so the document's fields
// are the wire's fields (ADR 0029). It runs at build time, from a test
// with -update; the binaries embed the JSON it wrote and never link this
// package.
//
// Schemas follow encoding/json: exported fields by their json names,
// embedded structs flattened, omitempty fields optional, every other field
// required, unknown properties refused (the APIs reject unknown fields, and
// a served field missing from the document fails validation).
package openapi

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"
)

// Param is a query or path parameter.
type Param struct {
	Name, In, Description string
	Type                  string // string | integer | boolean
	Required              bool
}

// Response is one documented status of a route. Body nil means no JSON
// body; ContentType overrides application/json (text/plain, a byte stream).
type Response struct {
	Description string
	Body        any
	ContentType string
}

// Route is one method and path of an API.
type Route struct {
	Method, Path, Summary string
	Params                []Param
	Request               any // JSON request body type; nil for none
	RequestOptional       bool
	// RequestContentType documents a raw request body (bytes of this
	// media type, e.g. application/octet-stream) when Request is nil.
	RequestContentType string
	Responses          map[int]Response
}

// Generator turns routes into a document.
type Generator struct {
	Title, Version, Description string
	// Substitute documents a type as another (json.RawMessage fields that
	// carry a known shape, say).
	Substitute map[reflect.Type]reflect.Type
	// FieldTypes documents one field as another type, by "Type.jsonName"
	// (a json.RawMessage spec that decodes into spec.Command, say).
	FieldTypes map[string]reflect.Type
	// Enums lists the allowed values of named string fields, by
	// "Type.jsonName" (Run.status, say).
	Enums map[string][]string

	schemas map[string]any
	types   map[string]reflect.Type
}

// Document returns the OpenAPI 3.1 document as indented JSON.
func (g *Generator) Document(routes []Route) ([]byte, error) {
	g.schemas, g.types = map[string]any{}, map[string]reflect.Type{}
	paths := map[string]map[string]any{}
	for _, r := range routes {
		ops := paths[r.Path]
		if ops == nil {
			ops = map[string]any{}
			paths[r.Path] = ops
		}
		m := strings.ToLower(r.Method)
		if _, dup := ops[m]; dup {
			return nil, fmt.Errorf("openapi: %s %s listed twice", r.Method, r.Path)
		}
		op := map[string]any{"summary": r.Summary, "operationId": operationID(r.Method, r.Path)}
		var params []any
		for _, p := range r.Params {
			params = append(params, map[string]any{"name": p.Name, "in": p.In, "required": p.Required || p.In == "path",
				"description": p.Description, "schema": map[string]any{"type": p.Type}})
		}
		if params != nil {
			op["parameters"] = params
		}
		if r.Request != nil {
			op["requestBody"] = map[string]any{"required": !r.RequestOptional,
				"content": map[string]any{"application/json": map[string]any{"schema": g.schemaOf(reflect.TypeOf(r.Request), true)}}}
		} else if r.RequestContentType != "" {
			op["requestBody"] = map[string]any{"required": !r.RequestOptional,
				"content": map[string]any{r.RequestContentType: map[string]any{"schema": map[string]any{"type": "string"}}}}
		}
		resps := map[string]any{}
		for code, resp := range r.Responses {
			rv := map[string]any{"description": resp.Description}
			ct := resp.ContentType
			if ct == "" {
				ct = "application/json"
			}
			if resp.Body != nil {
				rv["content"] = map[string]any{ct: map[string]any{"schema": g.schemaOf(reflect.TypeOf(resp.Body), false)}}
			} else if resp.ContentType != "" {
				rv["content"] = map[string]any{ct: map[string]any{"schema": map[string]any{"type": "string"}}}
			}
			resps[fmt.Sprint(code)] = rv
		}
		op["responses"] = resps
		ops[m] = op
	}
	doc := map[string]any{
		"openapi": "3.1.0",
		"info":    map[string]any{"title": g.Title, "version": g.Version, "description": g.Description},
		"paths":   paths,
		"components": map[string]any{
			"schemas": g.schemas,
			"securitySchemes": map[string]any{
				"bearer": map[string]any{"type": "http", "scheme": "bearer"},
			},
		},
		"security": []any{map[string]any{"bearer": []any{}}},
	}
	b, err := json.MarshalIndent(doc, "", "  ") // maps marshal with sorted keys: stable output
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

func operationID(method, path string) string {
	var b strings.Builder
	b.WriteString(strings.ToLower(method))
	for _, seg := range strings.Split(path, "/") {
		seg = strings.Trim(seg, "{}$")
		seg = strings.ReplaceAll(seg, ".", "_")
		if seg == "" || seg == "api" || seg == "v1" {
			continue
		}
		b.WriteString(strings.ToUpper(seg[:1]) + seg[1:])
	}
	return b.String()
}

var rawMessage = reflect.TypeOf(json.RawMessage(nil))

// schemaOf returns the schema of t: a $ref for named structs (added to
// components once), inline otherwise. Input schemas (request bodies) are
// separate components ("…Input") without required fields: the decoders
// default what is absent and name a missing mandatory field themselves.
func (g *Generator) schemaOf(t reflect.Type, input bool) any {
	if s, ok := g.Substitute[t]; ok {
		t = s
	}
	switch {
	case t == rawMessage:
		return map[string]any{}
	case t.Kind() == reflect.Pointer:
		return nullable(g.schemaOf(t.Elem(), input))
	}
	switch t.Kind() {
	case reflect.Bool:
		return map[string]any{"type": "boolean"}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return map[string]any{"type": "integer"}
	case reflect.Float32, reflect.Float64:
		return map[string]any{"type": "number"}
	case reflect.String:
		return map[string]any{"type": "string"}
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return map[string]any{"type": "string", "contentEncoding": "base64"}
		}
		// A nil slice encodes as null.
		return map[string]any{"type": []any{"array", "null"}, "items": g.schemaOf(t.Elem(), input)}
	case reflect.Map:
		return map[string]any{"type": []any{"object", "null"}, "additionalProperties": g.schemaOf(t.Elem(), input)}
	case reflect.Interface:
		return map[string]any{}
	case reflect.Struct:
		if t.Name() == "" {
			return g.object(t, "", input)
		}
		name := schemaName(t)
		if input {
			name += "Input"
		}
		if prev, ok := g.types[name]; ok && prev != t {
			name = strings.ReplaceAll(t.PkgPath(), "/", "_") + "_" + name // two types of one name
		}
		g.types[name] = t
		if _, done := g.schemas[name]; !done {
			g.schemas[name] = nil // placeholder: recursive types refer to it
			g.schemas[name] = g.object(t, strings.TrimSuffix(name, "Input"), input)
		}
		return map[string]any{"$ref": "#/components/schemas/" + name}
	}
	return map[string]any{}
}

func nullable(s any) any {
	m, ok := s.(map[string]any)
	if !ok {
		return s
	}
	if _, isRef := m["$ref"]; isRef || len(m) == 0 {
		if len(m) == 0 {
			return m
		}
		return map[string]any{"anyOf": []any{m, map[string]any{"type": "null"}}}
	}
	switch ty := m["type"].(type) {
	case string:
		m["type"] = []any{ty, "null"}
	case []any:
		for _, x := range ty {
			if x == "null" {
				return m
			}
		}
		m["type"] = append(ty, "null")
	}
	return m
}

// object describes a struct as encoding/json writes it.
func (g *Generator) object(t reflect.Type, name string, input bool) map[string]any {
	props := map[string]any{}
	var required []string
	g.fields(t, name, input, props, &required)
	if input {
		required = nil
	}
	sort.Strings(required)
	required = slices.Compact(required) // an outer field shadows an embedded one of its name
	obj := map[string]any{"type": "object", "properties": props, "additionalProperties": false}
	if len(required) > 0 {
		obj["required"] = required
	}
	return obj
}

func (g *Generator) fields(t reflect.Type, owner string, input bool, props map[string]any, required *[]string) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		jname, opts, _ := strings.Cut(tag, ",")
		if f.Anonymous && jname == "" {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				g.fields(ft, owner, input, props, required)
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if jname == "" {
			jname = f.Name
		}
		ft := f.Type
		if sub, ok := g.FieldTypes[owner+"."+jname]; ok {
			ft = sub
		}
		s := g.schemaOf(ft, input)
		if vals, ok := g.Enums[owner+"."+jname]; ok {
			if m, ok := s.(map[string]any); ok {
				m["enum"] = vals
			}
		}
		props[jname] = s
		omit := strings.Contains(opts, "omitempty") || strings.Contains(opts, "omitzero")
		if !omit {
			*required = append(*required, jname)
		}
	}
}

// schemaName is a component name: the type's name, generic arguments
// appended (List[…Task] → ListTask).
func schemaName(t reflect.Type) string {
	n := t.Name()
	base, args, ok := strings.Cut(n, "[")
	if !ok {
		return n
	}
	out := base
	for _, a := range strings.Split(strings.TrimSuffix(args, "]"), ",") {
		if i := strings.LastIndex(a, "."); i >= 0 {
			a = a[i+1:]
		}
		out += a
	}
	return out
}

// OK documents a 200 answer with a JSON body of body's type.
func OK(desc string, body any) map[int]Response {
	return map[int]Response{200: {Description: desc, Body: body}}
}

// Created documents a 201 answer with a JSON body of body's type.
func Created(desc string, body any) map[int]Response {
	return map[int]Response{201: {Description: desc, Body: body}}
}

// PathParam is a required string path parameter.
func PathParam(name, desc string) Param {
	return Param{Name: name, In: "path", Type: "string", Required: true, Description: desc}
}

// Query is an optional query parameter of type typ (string | integer |
// boolean).
func Query(name, typ, desc string) Param {
	return Param{Name: name, In: "query", Type: typ, Description: desc}
}
