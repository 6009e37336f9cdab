// Package worker runs the goroutines that poll the job queue.
package worker

import (
	"context"
	"log"
	"sync"
	"time"
)

// Run starts n workers that poll the queue named by queue() until ctx is done.
func Run(ctx context.Context, n int, queue func() string) {
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(id int) {
			defer wg.Done()
			poll(ctx, id, queue)
		}(i)
	}
	wg.Wait()
}

func poll(ctx context.Context, id int, queue func() string) {
	ticker := time.NewTicker(time.Second)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
			log.Printf("worker %d: polling %s", id, queue())
		}
	}
}
