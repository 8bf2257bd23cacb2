module github.com/ql3/ql3/panel/browsertest

go 1.26.0

require github.com/chromedp/chromedp v0.23.0

// core/totp: the browser test computes one-time codes as an authenticator app would.
require github.com/ql3/ql3/core v0.0.0

require (
	github.com/Masterminds/semver/v3 v3.5.0 // indirect
	github.com/chromedp/cdproto v0.159.0
	github.com/go-json-experiment/json v0.0.0-20260213210345-44df1a37e875 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/jackc/pgpassfile v1.0.0 // indirect
	github.com/jackc/pgservicefile v0.0.0-20240606120523-5a60cdf6a761 // indirect
	github.com/jackc/pgx/v5 v5.12.0 // indirect
	github.com/jackc/puddle/v2 v2.2.3 // indirect
	github.com/ql3/ql3/migrations v0.0.0 // indirect
	github.com/robfig/cron/v3 v3.0.1 // indirect
	go.yaml.in/yaml/v3 v3.0.6 // indirect
	golang.org/x/sync v0.25.0 // indirect
	golang.org/x/text v0.41.0 // indirect
)

// The real-PostgreSQL harness for the ql3-control browser test.
require github.com/ql3/ql3/controlplane v0.0.0

replace github.com/ql3/ql3/controlplane => ../../controlplane

replace github.com/ql3/ql3/core => ../../core

replace github.com/ql3/ql3/migrations => ../../migrations

replace github.com/ql3/ql3/scripts => ../../scripts

replace github.com/ql3/ql3/panel => ../

replace github.com/ql3/ql3/httpkit => ../../httpkit
