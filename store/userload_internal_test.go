package store

import (
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
	if p := queryPlan(t, db, userLoadQuery, "u"); !strings.Contains(p, "task_sets_open_owner") {
		t.Fatalf("GetUserLoad's plan does not use the open sets' index: %s", p)
	}
}
