module github.com/ql3/ql3/notifykit

go 1.26.0

require github.com/ql3/ql3/core v0.0.0

replace github.com/ql3/ql3/core => ../core

require github.com/wneessen/go-mail v0.8.1

require (
	golang.org/x/crypto v0.54.0 // indirect
	golang.org/x/text v0.44.0 // indirect
)
