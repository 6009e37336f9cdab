package main

import (
	"context"
	"log"
	"net/http"
	"os"
	"time"

	"feedsync/fetch"
)

func main() {
	if len(os.Args) < 2 {
		log.Fatal("usage: feedsync FEED_ADDRESS...")
	}
	client := &fetch.Client{HTTP: &http.Client{Timeout: 30 * time.Second}, MaxSize: 8 << 20}
	ctx := context.Background()
	for _, url := range os.Args[1:] {
		body, err := client.Get(ctx, url)
		if err != nil {
			log.Printf("%s: %v", url, err)
			continue
		}
		log.Printf("%s: %d bytes", url, len(body))
	}
}
