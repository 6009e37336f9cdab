// Package fetch downloads the documents the feed syncer mirrors.
package fetch

import (
	"context"
	"fmt"
	"io"
	"net/http"
)

// Client downloads documents over HTTP.
type Client struct {
	HTTP    *http.Client
	MaxSize int64
}

// Get returns the body of the document at url.
func (c *Client) Get(ctx context.Context, url string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("get %s: %s", url, resp.Status)
	}
	return io.ReadAll(io.LimitReader(resp.Body, c.MaxSize))
}
