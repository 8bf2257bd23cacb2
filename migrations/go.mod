module github.com/ql3/ql3/migrations

go 1.26
