module github.com/dolthub/fslock

go 1.13
