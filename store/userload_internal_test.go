package store

import (
	"context"
	"strings"
	"testing"
)

// TestUserLoadUsesOpenIndex: the per-user caps' count, run before every
// disclose, reads the open sets through the partial index, not every set
// the user ever had (which cost a user with thousands of finished sets
// about 0.3 ms per disclose).
func TestUserLoadUsesOpenIndex(t *testing.T) {
	db := NewDB(t.TempDir() + "/batchd.db")
	if err := db.Open(); err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.ro.QueryContext(context.Background(), "EXPLAIN QUERY PLAN "+userLoadQuery, "u")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var id, parent, notused int
		var detail string
		if err := rows.Scan(&id, &parent, &notused, &detail); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, detail)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if p := strings.Join(plan, "; "); !strings.Contains(p, "task_sets_open_owner") {
		t.Fatalf("GetUserLoad's plan does not use the open sets' index: %s", p)
	}
}
