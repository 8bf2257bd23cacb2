module github.com/ql3/ql3/core

go 1.26

require (
	github.com/Masterminds/semver/v3 v3.5.0 // indirect
	github.com/robfig/cron/v3 v3.0.1 // indirect
	github.com/stretchr/testify v1.12.1 // indirect
)
