module catalog

go 1.19
