package main

import (
	"encoding/json"
	"log"
	"net/http"
	"time"

	"eventlog/ring"
)

var events = ring.New(1000)

func record(w http.ResponseWriter, r *http.Request) {
	events.Push(ring.Event{At: time.Now(), Actor: r.FormValue("actor"), Action: r.FormValue("action")})
	w.WriteHeader(http.StatusNoContent)
}

func list(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(events.All())
}

func main() {
	http.HandleFunc("/record", record)
	http.HandleFunc("/events", list)
	log.Fatal(http.ListenAndServe("127.0.0.1:7070", nil))
}
