package store

import (
	"context"
	"strings"
	"testing"
)

// A set's held count, read with the set by every GetTaskSet (each event
// of a watch, batchctl status) and for every set of a page of sets,
// searches the partial index of held tasks, not the set's tasks: through
// the primary key it read every task of the set, 20,000 rows a read for a
// set of 20,000 tasks, however few were held.
func TestHeldCountsUseTheirIndex(t *testing.T) {
	t.Parallel()
	db := NewDB(t.TempDir() + "/batchd.db")
	if err := db.Open(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	for _, c := range []struct {
		in   string
		args []any
	}{{"?", []any{1}}, {"?, ?, ?", []any{1, 2, 3}}} {
		p := queryPlan(t, db, heldCountsSQL(c.in), c.args...)
		if !strings.Contains(p, "USING INDEX tasks_held") || strings.Contains(p, "PRIMARY KEY") {
			t.Errorf("plan of the held count of %d sets:\n%s\nwant a search of tasks_held only", len(c.args), p)
		}
	}
}

// queryPlan is SQLite's plan for q with args on db's readers, its lines'
// details joined by newlines.
func queryPlan(t *testing.T, db *DB, q string, args ...any) string {
	t.Helper()
	rows, err := db.ro.QueryContext(context.Background(), "EXPLAIN QUERY PLAN "+q, args...)
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
	return strings.Join(plan, "\n")
}
