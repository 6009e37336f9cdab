module eventlog

go 1.19
