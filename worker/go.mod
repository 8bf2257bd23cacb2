module github.com/ql3/ql3/worker

go 1.26

require github.com/ql3/ql3/core v0.0.0

replace github.com/ql3/ql3/core => ../core

require github.com/ql3/ql3/scripts v0.0.0

replace github.com/ql3/ql3/scripts => ../scripts

// Tests only (goroutine leak checks); the worker binary links none of it
// (deps_test.go).
require go.uber.org/goleak v1.3.0
