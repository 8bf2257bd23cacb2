package adminapi

import "github.com/ql3/ql3/httpkit"

// Patterns returns the ServeMux patterns s registered (the OpenAPI
// coverage test walks them).
func Patterns(s *Server) []string { return s.patterns }

// OpenAPIDocument is the embedded document, decompressed.
func OpenAPIDocument() []byte {
	doc, err := httpkit.Gunzip(openAPIDocumentGzip)
	if err != nil {
		panic("adminapi: embedded openapi.json.gz: " + err.Error())
	}
	return doc
}
