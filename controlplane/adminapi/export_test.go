package adminapi

// Patterns returns the ServeMux patterns s registered (the OpenAPI
// coverage test walks them).
func Patterns(s *Server) []string { return s.patterns }

// OpenAPIDocument is the embedded document.
func OpenAPIDocument() []byte { return openAPIDocument }
