// Writing many rows in one statement with their values bound: a VALUES
// list of numbered placeholders. The group commit's batched statements
// used to carry their rows as one JSON array read through json_each, and
// each j.value->>'k' parsed the row's object again: about 0.8 µs a field,
// some 45 µs of a finished task's 140. A bound value costs a cgo call.
//
// A batch is cut into chunks whose sizes are powers of two (at most
// valuesMaxRows), so that the statement texts, and the plans the writer's
// connection keeps for them (its _stmt_cache_size), are few.

package store

import (
	"context"
	"database/sql"
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

// valuesChunks calls do for each chunk of n rows: its first row and its
// size, a power of two, largest first.
func valuesChunks(n int, do func(first, rows int) error) error {
	first := 0
	for n > 0 {
		rows := valuesMaxRows
		for rows > n {
			rows /= 2
		}
		if err := do(first, rows); err != nil {
			return err
		}
		first, n = first+rows, n-rows
	}
	return nil
}

// execValues runs tmpl (see valuesSQL) over the rows in args, cols
// values a row, with fixed's values first in each statement, and returns
// the rows the statements changed. Values should be int64, float64,
// string, []byte or nil: the types database/sql passes without
// reflection.
func execValues(ctx context.Context, tx *Tx, tmpl string, fixed []any, cols int, args []any) (int64, error) {
	var changed int64
	err := valuesChunks(len(args)/cols, func(first, rows int) error {
		r, err := tx.ExecContext(ctx, valuesSQL(tmpl, len(fixed), cols, rows), chunkArgs(fixed, args[first*cols:(first+rows)*cols])...)
		if err != nil {
			return err
		}
		n, err := r.RowsAffected()
		changed += n
		return err
	})
	return changed, err
}

// queryValues is execValues for a statement that returns rows (RETURNING):
// scan reads each.
func queryValues(ctx context.Context, tx *Tx, tmpl string, fixed []any, cols int, args []any, scan func(*sql.Rows) error) error {
	return valuesChunks(len(args)/cols, func(first, rows int) error {
		rs, err := tx.QueryContext(ctx, valuesSQL(tmpl, len(fixed), cols, rows), chunkArgs(fixed, args[first*cols:(first+rows)*cols])...)
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

// chunkArgs is fixed then rows, in a new slice when fixed is not empty.
func chunkArgs(fixed, rows []any) []any {
	if len(fixed) == 0 {
		return rows
	}
	return append(append(make([]any, 0, len(fixed)+len(rows)), fixed...), rows...)
}
