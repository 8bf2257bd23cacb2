module github.com/ql3/ql3/scripts

go 1.26

// Test support only (openapitest): no binary links the scripts module.
require github.com/getkin/kin-openapi v0.153.0

require (
	github.com/go-openapi/jsonpointer v0.22.5 // indirect
	github.com/go-openapi/swag/jsonname v0.25.5 // indirect
	github.com/gorilla/mux v1.8.0 // indirect
	github.com/santhosh-tekuri/jsonschema/v6 v6.0.3 // indirect
	go.yaml.in/yaml/v4 v4.0.0 // indirect
	golang.org/x/text v0.14.0 // indirect
)
