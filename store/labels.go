// Labels: key=value pairs a set is given when it is disclosed, to find it
// again (`ls --label`).

package store

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"batchd/sched"
)

// Label is one key=value label of a set.
type Label = sched.Label

// Limits on labels.
const (
	MaxLabels          = 32
	MaxLabelKeyBytes   = 63
	MaxLabelValueBytes = 255
)

// CheckLabels refuses labels a set cannot carry (EINVALID): too many, a
// key that is empty, too long, or not made of letters, digits and
// "._-/", a value too long or holding a NUL byte, or a key twice.
func CheckLabels(ls []Label) error {
	if len(ls) > MaxLabels {
		return sched.Errorf(sched.EINVALID, "%d labels; at most %d", len(ls), MaxLabels)
	}
	for i, l := range ls {
		if l.Key == "" || len(l.Key) > MaxLabelKeyBytes || strings.IndexFunc(l.Key, badKeyRune) >= 0 {
			return sched.Errorf(sched.EINVALID, "label key %q: want 1 to %d letters, digits or ._-/", l.Key, MaxLabelKeyBytes)
		}
		if len(l.Value) > MaxLabelValueBytes || strings.IndexByte(l.Value, 0) >= 0 {
			return sched.Errorf(sched.EINVALID, "label %s: value longer than %d bytes or holding a NUL byte", l.Key, MaxLabelValueBytes)
		}
		for _, o := range ls[:i] {
			if o.Key == l.Key {
				return sched.Errorf(sched.EINVALID, "label %s given twice", l.Key)
			}
		}
	}
	return nil
}

func badKeyRune(r rune) bool {
	return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-' || r == '/')
}

// addLabels gives new set id its labels.
func addLabels(ctx context.Context, tx *Tx, id sched.SetID, ls []Label) error {
	for _, l := range ls {
		if _, err := tx.ExecContext(ctx, `INSERT INTO set_labels (set_id, key, value) VALUES (?, ?, ?)`, id, l.Key, l.Value); err != nil {
			return fmt.Errorf("record label: %w", err)
		}
	}
	return nil
}

// SortLabels sorts ls by key, the order sets carry them in.
func SortLabels(ls []Label) {
	slices.SortFunc(ls, func(a, b Label) int { return strings.Compare(a.Key, b.Key) })
}
