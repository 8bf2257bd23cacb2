module github.com/ql3/ql3/panel

go 1.26.0

require github.com/ql3/ql3/core v0.0.0

require github.com/ql3/ql3/httpkit v0.0.0

require github.com/robfig/cron/v3 v3.0.1 // indirect

replace github.com/ql3/ql3/core => ../core

replace github.com/ql3/ql3/httpkit => ../httpkit
