// Package config reads the job runner's configuration file.
package config

import (
	"encoding/json"
	"fmt"
	"os"
)

// Config is the runner's configuration.
type Config struct {
	Workers        int    `json:"workers"`
	Queue          string `json:"queue"`
	TimeoutSeconds int    `json:"timeoutSeconds"`
}

// Load reads and validates the configuration at path.
func Load(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read config: %w", err)
	}
	cfg := &Config{Workers: 4, Queue: "default", TimeoutSeconds: 30}
	if err := json.Unmarshal(data, cfg); err != nil {
		return nil, fmt.Errorf("parse %s: %w", path, err)
	}
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return cfg, nil
}

func (c *Config) validate() error {
	if c.Workers < 1 {
		return fmt.Errorf("workers must be at least 1, got %d", c.Workers)
	}
	if c.Queue == "" {
		return fmt.Errorf("queue must not be empty")
	}
	return nil
}
