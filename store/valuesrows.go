// Writing many rows in one statement with their values bound: a VALUES
// list of numbered placeholders. The group commit's batched statements
// used to carry their rows as one JSON array read through json_each, and
// each j.value->>'k' parsed the row's object again: about 0.8 µs a field,
// some 45 µs of a finished task's 140. A bound value costs a cgo call.
//
// A statement's rows are padded with rows of NULLs up to a power of two
// (a batch over valuesMaxRows is cut into chunks of that many first), so
// that a template has few texts, and the writer's connection keeps their
// plans (its _stmt_cache_size), while a batch of any size still runs one
// statement per table. Cutting a batch into power-of-two chunks instead
// ran up to eight statements per table for a batch of 255, each costing
// more than the NULLs bound in its place.

package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"strconv"
	"strings"
	"sync"
)

// valuesMaxRows is the most rows one statement carries.
const valuesMaxRows = 256

// valuesMark stands in a statement's template for its VALUES list.
const valuesMark = "{rows}"

// valuesTexts holds the statements made from templates, by template and
// row count.
var valuesTexts sync.Map // valuesKey → string

type valuesKey struct {
	tmpl string
	rows int
}

// valuesSQL is tmpl with valuesMark replaced by rows rows of cols
// placeholders each, numbered after the fixed parameters ?1..?fixed that
// tmpl may use itself.
func valuesSQL(tmpl string, fixed, cols, rows int) string {
	k := valuesKey{tmpl, rows}
	if s, ok := valuesTexts.Load(k); ok {
		return s.(string)
	}
	var b strings.Builder
	n := fixed
	for r := 0; r < rows; r++ {
		if r > 0 {
			b.WriteByte(',')
		}
		b.WriteByte('(')
		for c := 0; c < cols; c++ {
			if c > 0 {
				b.WriteByte(',')
			}
			n++
			b.WriteByte('?')
			b.WriteString(strconv.Itoa(n))
		}
		b.WriteByte(')')
	}
	s := strings.Replace(tmpl, valuesMark, "VALUES "+b.String(), 1)
	valuesTexts.Store(k, s)
	return s
}

// valuesChunks calls do for each chunk of n rows: its first row, its
// number of rows, and the size it is padded to, a power of two.
func valuesChunks(n int, do func(first, rows, size int) error) error {
	for first := 0; first < n; first += valuesMaxRows {
		rows := min(n-first, valuesMaxRows)
		size := 1
		for size < rows {
			size *= 2
		}
		if err := do(first, rows, size); err != nil {
			return err
		}
	}
	return nil
}

// execValues runs tmpl (see valuesSQL) over the rows in args, cols
// values a row, with fixed's values first in each statement. The padding
// rows are all NULL: tmpl must write nothing for a row whose first column
// is NULL (a join on it does not match; an INSERT selects WHERE column1
// IS NOT NULL). Values should be int64, float64, string, []byte or nil:
// the types database/sql passes without reflection.
//
// It runs the statement as a query: go-sqlite3 binds a query's values and
// takes its first step in one cgo call, where an Exec binds each value in
// a call of its own (some 45 a task, about 3 µs).
func execValues(ctx context.Context, tx *Tx, tmpl string, fixed []any, cols int, args []any) error {
	return queryValues(ctx, tx, tmpl, fixed, cols, args, func(*sql.Rows) error { return nil })
}

// execQuery runs statement q, which returns no rows, as a query: an
// Exec binds each of args in a cgo call of its own (36 for the bill
// totals' four rows), a query binds them all and steps in one.
func execQuery(ctx context.Context, tx *Tx, q string, args ...any) error {
	rs, err := tx.QueryContext(ctx, q, args...)
	if err != nil {
		return err
	}
	for rs.Next() {
	}
	if err := rs.Err(); err != nil {
		rs.Close()
		return err
	}
	return rs.Close()
}

// queryValues is execValues for a statement that returns rows (RETURNING):
// scan reads each.
func queryValues(ctx context.Context, tx *Tx, tmpl string, fixed []any, cols int, args []any, scan func(*sql.Rows) error) error {
	return valuesChunks(len(args)/cols, func(first, rows, size int) error {
		rs, err := tx.QueryContext(ctx, valuesSQL(tmpl, len(fixed), cols, size), chunkArgs(fixed, args[first*cols:(first+rows)*cols], (size-rows)*cols)...)
		if err != nil {
			return err
		}
		defer rs.Close()
		for rs.Next() {
			if err := scan(rs); err != nil {
				return err
			}
		}
		return rs.Err()
	})
}

// chunkArgs is fixed, then rows, then pad NULLs.
func chunkArgs(fixed, rows []any, pad int) []any {
	if len(fixed) == 0 && pad == 0 {
		return rows
	}
	// The NULLs are the new slice's zero values.
	out := make([]any, len(fixed)+len(rows)+pad)
	copy(out, fixed)
	copy(out[len(fixed):], rows)
	return out
}

// queryValuesRaw is queryValues with each row's values as the driver
// gives them (see rawRows), valid only during fn: no conversion by
// reflection per column.
func queryValuesRaw(ctx context.Context, tx *Tx, tmpl string, fixed []any, cols int, args []any, fn func([]driver.Value) error) error {
	return valuesChunks(len(args)/cols, func(first, rows, size int) error {
		return tx.rawRowsArgs(ctx, valuesSQL(tmpl, len(fixed), cols, size), chunkArgs(fixed, args[first*cols:(first+rows)*cols], (size-rows)*cols), fn)
	})
}
