module github.com/ql3/ql3/worker

go 1.26

require github.com/ql3/ql3/core v0.0.0

require github.com/stretchr/testify v1.12.1 // indirect

replace github.com/ql3/ql3/core => ../core
