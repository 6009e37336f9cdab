// Package ring keeps the most recent events of the audit log in memory.
package ring

import "time"

// Event is one audit event.
type Event struct {
	At     time.Time
	Actor  string
	Action string
}

// Ring keeps the last len(buf) events.
type Ring struct {
	buf   []Event
	start int // index of the oldest event
	count int
}

// New returns a ring that keeps the last capacity events.
func New(capacity int) *Ring {
	if capacity < 1 {
		panic("ring: capacity must be at least 1")
	}
	return &Ring{buf: make([]Event, capacity)}
}

// Push adds e, dropping the oldest event when the ring is full.
func (r *Ring) Push(e Event) {
	if r.count < len(r.buf) {
		r.buf[(r.start+r.count)%len(r.buf)] = e
		r.count++
		return
	}
	r.buf[r.start] = e
	r.start = (r.start + 1) % len(r.buf)
}

// All returns the events, oldest first.
func (r *Ring) All() []Event {
	out := make([]Event, 0, r.count)
	for i := 0; i < r.count; i++ {
		out = append(out, r.buf[(r.start+i)%len(r.buf)])
	}
	return out
}

// Len returns how many events are kept.
func (r *Ring) Len() int { return r.count }
