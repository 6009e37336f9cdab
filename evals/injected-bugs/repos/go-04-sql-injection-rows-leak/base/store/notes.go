// Package store keeps the notes in a SQL database.
package store

import (
	"context"
	"database/sql"
)

// Note is one note of a user.
type Note struct {
	ID    int64
	Title string
	Body  string
}

// Store reads and writes notes.
type Store struct {
	db *sql.DB
}

// New returns a store over db.
func New(db *sql.DB) *Store { return &Store{db: db} }

// Get returns the note id of owner.
func (s *Store) Get(ctx context.Context, owner string, id int64) (Note, error) {
	var n Note
	err := s.db.QueryRowContext(ctx,
		"SELECT id, title, body FROM notes WHERE owner = $1 AND id = $2", owner, id,
	).Scan(&n.ID, &n.Title, &n.Body)
	return n, err
}

// Titles returns the ids and titles of the notes of owner, newest first.
func (s *Store) Titles(ctx context.Context, owner string) ([]Note, error) {
	rows, err := s.db.QueryContext(ctx, "SELECT id, title FROM notes WHERE owner = $1 ORDER BY id DESC", owner)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Note
	for rows.Next() {
		var n Note
		if err := rows.Scan(&n.ID, &n.Title); err != nil {
			return nil, err
		}
		out = append(out, n)
	}
	return out, rows.Err()
}
