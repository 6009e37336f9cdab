// Package api serves the notes over HTTP.
package api

import (
	"encoding/json"
	"net/http"

	"notes/store"
)

// Server answers the API requests; the user is set by the auth middleware.
type Server struct {
	Store *store.Store
}

func user(r *http.Request) string { return r.Header.Get("X-Authenticated-User") }

// Titles answers GET /notes.
func (s *Server) Titles(w http.ResponseWriter, r *http.Request) {
	notes, err := s.Store.Titles(r.Context(), user(r))
	if err != nil {
		http.Error(w, "cannot list notes", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(notes)
}
