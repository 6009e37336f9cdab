package extract

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
)

// Manifest is the bundle's plugin.json.
type Manifest struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	Entry   string `json:"entry"`
}

// ReadManifest reads dir/plugin.json.
func ReadManifest(dir string) (Manifest, error) {
	var m Manifest
	data, err := os.ReadFile(filepath.Join(dir, "plugin.json"))
	if err != nil {
		return m, err
	}
	if err := json.Unmarshal(data, &m); err != nil {
		return m, fmt.Errorf("plugin.json: %w", err)
	}
	if m.Name == "" || m.Entry == "" {
		return m, fmt.Errorf("plugin.json: name and entry are required")
	}
	return m, nil
}
