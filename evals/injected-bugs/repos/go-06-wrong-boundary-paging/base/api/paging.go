// Package api serves the product catalog.
package api

import (
	"fmt"
	"net/url"
	"strconv"
)

// Limits of a page of results.
const (
	DefaultLimit = 20
	MaxLimit     = 100
)

// Page is the part of the results a request asks for.
type Page struct {
	Limit  int
	Offset int
}

// ParsePage reads limit and offset from the query of a request.
func ParsePage(q url.Values) (Page, error) {
	p := Page{Limit: DefaultLimit}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > MaxLimit {
			return p, fmt.Errorf("limit must be between 1 and %d", MaxLimit)
		}
		p.Limit = n
	}
	if v := q.Get("offset"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return p, fmt.Errorf("offset must not be negative")
		}
		p.Offset = n
	}
	return p, nil
}
