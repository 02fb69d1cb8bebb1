// Finding sets: ListSets filters the sets by owner, name, state, creation
// time and labels, newest first, in pages. Each filter has an index that
// lets SQLite walk the matching sets newest first and stop at the page's
// end (migration 0022), so a page costs about its size, whatever the
// number of sets (BenchmarkListSets: 100,000 sets).

package store

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"batchd/sched"
)

// SetFilter selects sets for ListSets. Zero fields select everything.
type SetFilter struct {
	// Owner is one owner's name, or AllOwners.
	Owner string
	// NameGlob matches the set's name with SQLite's GLOB (*, ?, [...];
	// case-sensitive); "" matches every name.
	NameGlob string
	// States keeps the sets in one of these states (empty: every state).
	States []sched.SetState
	// Since and Until keep the sets created at or after Since and before
	// Until (zero: no bound).
	Since, Until time.Time
	// IncludeOpen keeps, beside the sets created at or after Since, the
	// open sets (waiting, queued, running) created before it.
	IncludeOpen bool
	// Labels keeps the sets that carry every one of these labels.
	Labels []Label
	// PageSize is the most sets a page holds (0: DefaultSetPage; at most
	// MaxSetPage); PageToken continues after the page that returned it.
	PageSize  int32
	PageToken string
}

// endedOutcomeSQL is an ended set's state (done, failed, canceled) as the
// expression indexes of migration 0022 spell it: the planner uses those
// indexes only for the very same text.
const endedOutcomeSQL = `(CASE WHEN n_failed > 0 THEN 'failed' WHEN n_finished + n_executed = 0 THEN 'canceled' ELSE 'done' END)`

// liveCopySQL is true for a set with a running or suspended copy.
const liveCopySQL = `EXISTS (SELECT 1 FROM copies c WHERE c.set_id = task_sets.id AND c.state IN ('running', 'suspended'))`

// stateSQL is the condition for sets in state st.
func stateSQL(st sched.SetState) string {
	switch st {
	case sched.SetWaiting:
		return `(n_disclosed + n_requested > 0 AND waiting = 1)`
	case sched.SetRunning:
		return `(n_disclosed + n_requested > 0 AND waiting = 0 AND ` + liveCopySQL + `)`
	case sched.SetQueued:
		return `(n_disclosed + n_requested > 0 AND waiting = 0 AND NOT ` + liveCopySQL + `)`
	}
	return `(n_disclosed + n_requested = 0 AND ` + endedOutcomeSQL + ` = '` + string(st) + `')`
}

// ListSets returns a page of the sets f selects, newest first, and the
// next page's token ("" after the last page). Errors: EINVALID (a bad
// page token, state, glob or label).
func (db *DB) ListSets(ctx context.Context, f SetFilter) ([]sched.TaskSet, string, error) {
	size := clampPage(f.PageSize, DefaultSetPage, MaxSetPage)
	before := int64(1<<63 - 1)
	if f.PageToken != "" {
		n, err := strconv.ParseInt(f.PageToken, 10, 64)
		if err != nil || n <= 0 {
			return nil, "", sched.Errorf(sched.EINVALID, "bad page token %q", f.PageToken)
		}
		before = n
	}
	if err := CheckLabels(f.Labels); err != nil {
		return nil, "", err
	}
	if len(f.NameGlob) > MaxNameBytes || strings.IndexByte(f.NameGlob, 0) >= 0 {
		return nil, "", sched.Errorf(sched.EINVALID, "name pattern longer than %d bytes or holding a NUL byte", MaxNameBytes)
	}
	// One query per state, each down its own index, merged here: an OR of
	// states would walk every set of the owner.
	var states []sched.SetState
	for _, st := range f.States {
		if !st.Valid() {
			return nil, "", sched.Errorf(sched.EINVALID, "unknown set state %q (want one of %v)", st, sched.SetStates)
		}
		if !slices.Contains(states, st) {
			states = append(states, st)
		}
	}
	if len(states) == 0 {
		states = []sched.SetState{""}
	}
	var (
		sets []sched.TaskSet
		next string
	)
	err := db.read(ctx, func(tx *Tx) error {
		lo, hi, err := createdRange(ctx, tx, f.Since, f.Until)
		if err != nil || (lo >= hi && !f.IncludeOpen) {
			return err
		}
		hi = min(hi, before)
		var found []setKey
		for _, st := range states {
			q, args := listQuery(f, st, lo, hi, size+1)
			keys, err := scanKeys(ctx, tx, q, args...)
			if err != nil {
				return err
			}
			found = append(found, keys...)
		}
		if f.IncludeOpen && lo > 0 {
			// The open sets created before Since, by their states' indexes.
			for _, st := range []sched.SetState{sched.SetWaiting, sched.SetQueued, sched.SetRunning} {
				if states[0] != "" && !slices.Contains(states, st) {
					continue
				}
				q, args := listQuery(f, st, 0, min(lo, hi), size+1)
				keys, err := scanKeys(ctx, tx, q, args...)
				if err != nil {
					return err
				}
				found = append(found, keys...)
			}
		}
		slices.SortFunc(found, func(a, b setKey) int { return cmp.Compare(b.id, a.id) })
		found = slices.CompactFunc(found, func(a, b setKey) bool { return a.id == b.id })
		if len(found) > size {
			found = found[:size]
			next = strconv.FormatInt(int64(found[size-1].id), 10)
		}
		if sets, err = getSets(ctx, tx, found); err != nil {
			return err
		}
		if err := pageRoutes(ctx, tx, sets); err != nil {
			return err
		}
		return pageExtras(ctx, tx, sets)
	})
	return sets, next, err
}

// setKey is a set found by a list query.
type setKey struct {
	id    sched.SetID
	owner string
}

func scanKeys(ctx context.Context, tx *Tx, q string, args ...any) ([]setKey, error) {
	rows, err := tx.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("list sets: %w", err)
	}
	defer rows.Close()
	var keys []setKey
	for rows.Next() {
		var k setKey
		if err := rows.Scan(&k.id, &k.owner); err != nil {
			return nil, err
		}
		keys = append(keys, k)
	}
	return keys, rows.Err()
}

// createdRange turns a creation time range into the range of set ids
// [lo, hi) created in it: sets are numbered in the order they are
// created, and Disclose never gives a set an earlier creation time than
// the set before it, so the range is exact, and each filter's index walks
// ids alone.
func createdRange(ctx context.Context, tx *Tx, since, until time.Time) (lo, hi int64, err error) {
	lo, hi = 0, int64(1<<63-1)
	first := func(at time.Time, into *int64) error {
		err := tx.QueryRowContext(ctx, `SELECT id FROM task_sets WHERE created_at >= ? ORDER BY created_at, id LIMIT 1`, nanos(at)).Scan(into)
		if err == sql.ErrNoRows {
			*into = int64(1<<63 - 1) // none created since: an empty range
			return nil
		}
		return err
	}
	if !since.IsZero() {
		if err := first(since, &lo); err != nil {
			return 0, 0, fmt.Errorf("list sets: %w", err)
		}
	}
	if !until.IsZero() {
		if err := first(until, &hi); err != nil {
			return 0, 0, fmt.Errorf("list sets: %w", err)
		}
	}
	return lo, hi, nil
}

// listQuery is the query of ListSets for f in state st ("": any): the
// ids and owners of the sets with ids in [lo, hi), newest first, at most
// limit. It is driven by f's first label when it has one (labels are
// usually rare), else by a three-character piece of its name pattern,
// else by the state's index, else by the owner's sets with their names.
func listQuery(f SetFilter, st sched.SetState, lo, hi int64, limit int) (string, []any) {
	var (
		from  = `task_sets`
		where []string
		args  []any
		order = `id`
	)
	labels := f.Labels
	gram := nameGram(f.NameGlob)
	if len(labels) > 0 {
		// CROSS JOIN: the label's sets outside, newest first, so that the
		// walk stops at the page's end.
		from, order = `set_labels l CROSS JOIN task_sets ON task_sets.id = l.set_id`, `l.set_id`
		where, args = append(where, `l.key = ? AND l.value = ? AND l.set_id >= +? AND l.set_id < +?`), append(args, labels[0].Key, labels[0].Value, lo, hi)
		labels = labels[1:]
	} else if gram != "" {
		// The sets whose name holds a piece of the pattern, newest first.
		from, order = `set_name_grams g CROSS JOIN task_sets ON task_sets.id = g.set_id`, `g.set_id`
		where, args = append(where, `g.gram = ? AND g.set_id >= +? AND g.set_id < +?`), append(args, gram, lo, hi)
	} else if f.NameGlob != "" && st == "" && f.Owner != AllOwners {
		// The owner's names newest first, matched in the index.
		from = `task_sets INDEXED BY task_sets_owner_id_name`
	}
	if f.Owner != AllOwners {
		where, args = append(where, `owner = +?`), append(args, f.Owner)
	}
	where, args = append(where, `id >= +? AND id < +?`, `staged = 0`), append(args, lo, hi)
	if f.NameGlob != "" {
		where, args = append(where, `name GLOB ?`), append(args, f.NameGlob)
	}
	if st != "" {
		where = append(where, stateSQL(st))
	}
	for _, l := range labels {
		where, args = append(where, `EXISTS (SELECT 1 FROM set_labels x WHERE x.set_id = task_sets.id AND x.key = ? AND x.value = ?)`), append(args, l.Key, l.Value)
	}
	return `SELECT id, owner FROM ` + from + ` WHERE ` + strings.Join(where, " AND ") + ` ORDER BY ` + order + ` DESC LIMIT +?`, append(args, limit)
}

// pageExtras reads the labels and dependencies of a page of sets, in one
// query each.
func pageExtras(ctx context.Context, tx *Tx, sets []sched.TaskSet) error {
	if len(sets) == 0 {
		return nil
	}
	at := make(map[sched.SetID]int, len(sets))
	in := strings.Repeat(",?", len(sets))[1:]
	args := make([]any, len(sets))
	for i, s := range sets {
		at[s.ID], args[i] = i, s.ID
	}
	rows, err := tx.QueryContext(ctx, `SELECT set_id, key, value FROM set_labels WHERE set_id IN (`+in+`) ORDER BY set_id, key`, args...)
	if err != nil {
		return fmt.Errorf("read labels: %w", err)
	}
	for rows.Next() {
		var (
			id sched.SetID
			l  Label
		)
		if err := rows.Scan(&id, &l.Key, &l.Value); err != nil {
			rows.Close()
			return err
		}
		sets[at[id]].Labels = append(sets[at[id]].Labels, l)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	rows, err = tx.QueryContext(ctx, `SELECT set_id, on_set, on_idx, any_outcome FROM set_deps WHERE set_id IN (`+in+`) ORDER BY set_id, on_set, on_idx`, args...)
	if err != nil {
		return fmt.Errorf("read dependencies: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var (
			id sched.SetID
			d  sched.Dependency
		)
		if err := rows.Scan(&id, &d.Set, &d.Index, &d.Any); err != nil {
			return err
		}
		sets[at[id]].After = append(sets[at[id]].After, d)
	}
	return rows.Err()
}

// nameGram picks the piece of three characters that drives a name
// pattern's walk: the last of the longest run of characters that are no
// wildcard (*, ?, [...]); "" when no run is three long.
func nameGram(glob string) string {
	var best, run []rune
	keep := func() {
		if len(run) > len(best) {
			best = append(best[:0], run...)
		}
		run = run[:0]
	}
	rs := []rune(glob)
	for i := 0; i < len(rs); i++ {
		switch rs[i] {
		case '*', '?':
			keep()
		case '[':
			keep()
			// A class ends at the next ] after its first character.
			j := i + 2
			for j < len(rs) && rs[j] != ']' {
				j++
			}
			i = j
		default:
			run = append(run, rs[i])
		}
	}
	keep()
	if len(best) < 3 {
		return ""
	}
	return string(best[len(best)-3:])
}

// addNameGrams records the three-character pieces of new set id's name
// (set_name_grams), counted as SQLite's substr counts.
func addNameGrams(ctx context.Context, tx *Tx, id sched.SetID) error {
	_, err := tx.ExecContext(ctx, `INSERT OR IGNORE INTO set_name_grams (gram, set_id)
		WITH RECURSIVE g(id, name, i) AS (
			SELECT id, name, 1 FROM task_sets WHERE id = ? AND length(name) >= 3
			UNION ALL SELECT id, name, i + 1 FROM g WHERE i + 3 <= length(name))
		SELECT substr(name, i, 3), id FROM g`, id)
	if err != nil {
		return fmt.Errorf("index the name: %w", err)
	}
	return nil
}
