module feedsync

go 1.19
