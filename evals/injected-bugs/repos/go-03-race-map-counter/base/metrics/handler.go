package metrics

import (
	"fmt"
	"net/http"
	"time"
)

// Handler serves the counters in the text exposition format.
func (r *Registry) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		for _, name := range r.Names() {
			fmt.Fprintf(w, "%s %d\n", name, r.Get(name))
		}
	})
}

// Timed counts the requests of next under name.
func (r *Registry) Timed(name string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		start := time.Now()
		next.ServeHTTP(w, req)
		_ = start
		r.Add(name+"_requests_total", 1)
	})
}
