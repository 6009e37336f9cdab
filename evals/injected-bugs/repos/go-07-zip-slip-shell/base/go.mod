module bundler

go 1.19
