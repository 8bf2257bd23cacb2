module github.com/ql3/ql3/scripts

go 1.26
