package httpapi

import (
	_ "embed"
)

// OpenAPIPath serves the API's OpenAPI 3.1 document.
const OpenAPIPath = "/api/v1/openapi.json"

// openAPIDocument is generated from the route table and the wire types by
// `go test ./httpapi -run TestOpenAPIDocumentUpToDate -update` (ADR 0029):
// the binary embeds its gzip copy (the same test keeps openapi.json.gz equal
// to the reviewed openapi.json), serves it with httpkit.ServeGzipDocument
// and links no generator.
//
//go:embed openapi.json.gz
var openAPIDocumentGzip []byte
