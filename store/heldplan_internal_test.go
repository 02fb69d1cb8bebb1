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
	ctx := context.Background()
	for _, c := range []struct {
		in   string
		args []any
	}{{"?", []any{1}}, {"?, ?, ?", []any{1, 2, 3}}} {
		rows, err := db.ro.QueryContext(ctx, `EXPLAIN QUERY PLAN `+heldCountsSQL(c.in), c.args...)
		if err != nil {
			t.Fatal(err)
		}
		var plan []string
		for rows.Next() {
			var id, parent, notused int
			var detail string
			if err := rows.Scan(&id, &parent, &notused, &detail); err != nil {
				t.Fatal(err)
			}
			plan = append(plan, detail)
		}
		rows.Close()
		p := strings.Join(plan, "\n")
		if !strings.Contains(p, "USING INDEX tasks_held") || strings.Contains(p, "PRIMARY KEY") {
			t.Errorf("plan of the held count of %d sets:\n%s\nwant a search of tasks_held only", len(c.args), p)
		}
	}
}
