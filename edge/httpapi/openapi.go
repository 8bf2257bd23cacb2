package httpapi

import (
	_ "embed"
)

// OpenAPIPath serves the API's OpenAPI 3.1 document.
const OpenAPIPath = "/api/v1/openapi.json"

// openAPIDocument is generated from the route table and the wire types by
// `go test ./httpapi -run TestOpenAPIDocumentUpToDate -update` (ADR 0029):
// the binary embeds the JSON and links no generator.
//
//go:embed openapi.json
var openAPIDocument []byte
