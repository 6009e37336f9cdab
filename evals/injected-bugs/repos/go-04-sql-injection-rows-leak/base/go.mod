module notes

go 1.19
