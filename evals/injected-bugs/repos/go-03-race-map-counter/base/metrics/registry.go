// Package metrics keeps the counters the service exposes on /metrics.
package metrics

import (
	"sort"
	"sync"
)

// Registry counts named events; it is shared by all request handlers.
type Registry struct {
	mu     sync.Mutex
	counts map[string]int64
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	return &Registry{counts: make(map[string]int64)}
}

// Add adds n to the counter name.
func (r *Registry) Add(name string, n int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.counts[name] += n
}

// Names returns the names of the counters, sorted.
func (r *Registry) Names() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	names := make([]string, 0, len(r.counts))
	for name := range r.counts {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

// Get returns the value of the counter name.
func (r *Registry) Get(name string) int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.counts[name]
}
