module jobrunner

go 1.19
