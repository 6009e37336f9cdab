package main

import (
	"context"
	"flag"
	"log"
	"os"
	"os/signal"
	"syscall"

	"jobrunner/config"
	"jobrunner/worker"
)

func main() {
	path := flag.String("config", "runner.json", "configuration file")
	flag.Parse()
	cfg, err := config.Load(*path)
	if err != nil {
		log.Fatal(err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	log.Printf("starting %d workers on queue %s", cfg.Workers, cfg.Queue)
	worker.Run(ctx, cfg.Workers, func() string { return cfg.Queue })
}
