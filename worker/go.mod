module github.com/ql3/ql3/worker

go 1.26

replace github.com/ql3/ql3/core => ../core

require github.com/ql3/ql3/scripts v0.0.0

replace github.com/ql3/ql3/scripts => ../scripts
