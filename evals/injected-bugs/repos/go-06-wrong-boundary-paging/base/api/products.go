package api

import (
	"encoding/json"
	"net/http"
)

// Product is one item of the catalog.
type Product struct {
	SKU   string `json:"sku"`
	Name  string `json:"name"`
	Cents int64  `json:"cents"`
}

// Lister reads products from the database, in SKU order.
type Lister interface {
	List(offset, limit int) ([]Product, error)
}

// Products answers GET /products?limit=N&offset=M.
func Products(db Lister) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		p, err := ParsePage(r.URL.Query())
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		items, err := db.List(p.Offset, p.Limit)
		if err != nil {
			http.Error(w, "cannot list products", http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(items)
	}
}
