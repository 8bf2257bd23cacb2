module github.com/ql3/ql3/core

go 1.26.0

require (
	github.com/Masterminds/semver/v3 v3.5.0
	github.com/ql3/ql3/scripts v0.0.0
	github.com/robfig/cron/v3 v3.0.1
)

require golang.org/x/text v0.44.0

require (
	golang.org/x/crypto v0.59.0
	golang.org/x/sys v0.50.0 // indirect
)

replace github.com/ql3/ql3/scripts => ../scripts
