// Package checks runs the health checks of the service's dependencies.
package checks

import (
	"context"
	"time"
)

// Check is one named health check.
type Check struct {
	Name string
	Run  func(ctx context.Context) error
}

// Result is the outcome of one check.
type Result struct {
	Name    string        `json:"name"`
	OK      bool          `json:"ok"`
	Error   string        `json:"error,omitempty"`
	Elapsed time.Duration `json:"elapsedNs"`
}

// RunAll runs the checks one after the other, each with the given timeout.
func RunAll(ctx context.Context, checks []Check, timeout time.Duration) []Result {
	results := make([]Result, 0, len(checks))
	for _, c := range checks {
		cctx, cancel := context.WithTimeout(ctx, timeout)
		start := time.Now()
		err := c.Run(cctx)
		cancel()
		r := Result{Name: c.Name, OK: err == nil, Elapsed: time.Since(start)}
		if err != nil {
			r.Error = err.Error()
		}
		results = append(results, r)
	}
	return results
}
