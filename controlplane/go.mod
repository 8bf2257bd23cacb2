module github.com/ql3/ql3/controlplane

go 1.26.0

require github.com/ql3/ql3/core v0.0.0

replace github.com/ql3/ql3/core => ../core

require github.com/ql3/ql3/migrations v0.0.0

require (
	github.com/google/uuid v1.6.0
	github.com/jackc/pgx/v5 v5.12.0
)

require (
	github.com/Masterminds/semver/v3 v3.5.0 // indirect
	github.com/dustin/go-humanize v1.1.0 // indirect
	github.com/getkin/kin-openapi v0.153.0 // indirect
	github.com/go-openapi/jsonpointer v0.22.5 // indirect
	github.com/go-openapi/swag/jsonname v0.25.5 // indirect
	github.com/gorilla/mux v1.8.0 // indirect
	github.com/jackc/pgpassfile v1.0.0 // indirect
	github.com/jackc/pgservicefile v0.0.0-20240606120523-5a60cdf6a761 // indirect
	github.com/jackc/puddle/v2 v2.2.3 // indirect
	github.com/mattn/go-isatty v0.0.24 // indirect
	github.com/ncruces/go-strftime v1.1.0 // indirect
	github.com/remyoudompheng/bigfft v0.0.0-20230129092748-24d4a6f8daec // indirect
	github.com/robfig/cron/v3 v3.0.1 // indirect
	github.com/santhosh-tekuri/jsonschema/v6 v6.0.3 // indirect
	github.com/stretchr/testify v1.12.1 // indirect
	github.com/wneessen/go-mail v0.8.1 // indirect
	go.yaml.in/yaml/v4 v4.0.0 // indirect
	golang.org/x/crypto v0.59.0 // indirect
	golang.org/x/sync v0.25.0 // indirect
	golang.org/x/sys v0.50.0 // indirect
	golang.org/x/text v0.44.0 // indirect
	modernc.org/libc v1.80.1 // indirect
	modernc.org/mathutil v1.7.1 // indirect
	modernc.org/memory v1.12.1 // indirect
)

replace github.com/ql3/ql3/migrations => ../migrations

require (
	github.com/ql3/ql3/scripts v0.0.0
	go.uber.org/goleak v1.3.0
)

replace github.com/ql3/ql3/scripts => ../scripts

// The web panel's assets, sessions and schedule preview (stdlib + core).
require github.com/ql3/ql3/panel v0.0.0

replace github.com/ql3/ql3/panel => ../panel

require (
	github.com/ql3/ql3/httpkit v0.0.0
	github.com/ql3/ql3/notifykit v0.0.0
	modernc.org/sqlite v1.62.0
)

replace github.com/ql3/ql3/httpkit => ../httpkit

replace github.com/ql3/ql3/notifykit => ../notifykit

// Subscriptions' fetch-and-check engine (the system git, ADR 0054, ADR
// 0061), shared by both binaries.
require github.com/ql3/ql3/subfetch v0.0.0

replace github.com/ql3/ql3/subfetch => ../subfetch

// The QingLong source reader the import shares with the edge (ADR 0063).
require github.com/ql3/ql3/qlsource v0.0.0

replace github.com/ql3/ql3/qlsource => ../qlsource
