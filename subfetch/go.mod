module github.com/ql3/ql3/subfetch

go 1.26.0

require github.com/ql3/ql3/core v0.0.0

replace github.com/ql3/ql3/core => ../core
