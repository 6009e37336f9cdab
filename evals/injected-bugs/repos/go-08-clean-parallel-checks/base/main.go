package main

import (
	"context"
	"encoding/json"
	"errors"
	"log"
	"net/http"
	"os"
	"time"

	"healthd/checks"
)

func main() {
	all := []checks.Check{
		{Name: "disk", Run: func(context.Context) error {
			_, err := os.Stat(os.TempDir())
			return err
		}},
		{Name: "config", Run: func(context.Context) error {
			if os.Getenv("APP_ENV") == "" {
				return errors.New("APP_ENV is not set")
			}
			return nil
		}},
	}
	http.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {
		results := checks.RunAll(r.Context(), all, 2*time.Second)
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(results)
	})
	log.Fatal(http.ListenAndServe("127.0.0.1:9090", nil))
}
