module statsd-lite

go 1.19
