module healthd

go 1.19
