package store

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"hash"
	"math"
	"sort"

	"batchd/sched"
)

// DiscloseHasher hashes the content of a Disclose (set id, name, request
// flag and every task's spec, in order) for its idempotency key. It hashes
// the domain values, never the wire bytes, so that a call sent as JSON and
// its retry sent as binary Protobuf hash alike; a spec's environment is
// hashed in key order. Tasks may be added in several pieces (a streamed
// disclose): the hash depends only on the whole sequence.
type DiscloseHasher struct {
	h   hash.Hash
	buf []byte
}

// NewDiscloseHasher starts the hash of a Disclose with these header values.
func NewDiscloseHasher(set sched.SetID, name string, request bool) *DiscloseHasher {
	d := &DiscloseHasher{h: sha256.New()}
	d.str("batchd disclose v1")
	d.u64(uint64(set))
	d.str(name)
	d.u64(uint64(boolInt(request)))
	return d
}

// Add hashes the next tasks.
func (d *DiscloseHasher) Add(tasks ...sched.TaskSpec) {
	for _, t := range tasks {
		d.str("task")
		d.u64(uint64(len(t.Argv)))
		for _, a := range t.Argv {
			d.str(a)
		}
		keys := make([]string, 0, len(t.Env))
		for k := range t.Env {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		d.u64(uint64(len(keys)))
		for _, k := range keys {
			d.str(k)
			d.str(t.Env[k])
		}
		d.str(t.Dir)
		d.f64(t.EstimateSeconds)
		d.u64(uint64(boolInt(t.NoSpeculation)))
		d.f64(t.TimeoutSeconds)
		d.f64(t.DeadlineSeconds)
		if t.Cpus > 1 || t.MemoryMB != 0 {
			// Only when asked for, so that the hashes of keys stored
			// before resource requests existed still match.
			d.str("resources")
			d.u64(uint64(t.Cpus))
			d.u64(uint64(t.MemoryMB))
		}
		if t.GPUs != 0 {
			d.str("gpus")
			d.u64(uint64(t.GPUs))
		}
	}
}

// AddArray hashes a task array (after any tasks).
func (d *DiscloseHasher) AddArray(a TaskArray) {
	d.str("array")
	d.u64(uint64(a.First))
	d.u64(uint64(a.Step))
	d.u64(uint64(a.Count))
	d.Add(a.Spec)
}

// Sum returns the hash in hex.
func (d *DiscloseHasher) Sum() string { return hex.EncodeToString(d.h.Sum(nil)) }

func (d *DiscloseHasher) u64(v uint64) {
	d.buf = binary.BigEndian.AppendUint64(d.buf[:0], v)
	d.h.Write(d.buf)
}

// f64 hashes a float by value: 0 and -0 alike (both mean "none").
func (d *DiscloseHasher) f64(v float64) {
	if v == 0 {
		v = 0
	}
	d.u64(math.Float64bits(v))
}

// str hashes a string with its length first, so that no two sequences of
// strings hash alike by running into each other.
func (d *DiscloseHasher) str(s string) {
	d.u64(uint64(len(s)))
	d.h.Write([]byte(s))
}

// Hash returns the content hash of this Disclose: RequestHash when set,
// otherwise the hash of SetID, Name, Request and Tasks.
func (in DiscloseInput) Hash() string {
	if in.RequestHash != "" {
		return in.RequestHash
	}
	d := NewDiscloseHasher(in.SetID, in.Name, in.Request)
	d.Add(in.Tasks...)
	if in.Array != nil {
		d.AddArray(*in.Array)
	}
	return d.Sum()
}

// IdempotencyKeyKnown says whether the owner's Disclose with this key was
// already stored with this content hash (see DiscloseHasher): its retry is
// then a replay, which the caps must not refuse. The same key with other
// content is ECONFLICT, naming the key. A key stored before content hashes
// existed (migration 0004) has no hash and is known whatever the content.
func (db *DB) IdempotencyKeyKnown(ctx context.Context, owner, key, hash string) (bool, error) {
	var known bool
	err := db.read(ctx, func(tx *Tx) (err error) {
		known, _, err = idempotencyKey(ctx, tx, owner, key, hash)
		return err
	})
	return known, err
}

// idempotencyKey looks up the owner's key; when known, it returns the
// first answer's set, first index and count, or ECONFLICT when the stored
// content hash differs from hash.
func idempotencyKey(ctx context.Context, tx *Tx, owner, key, hash string) (bool, keyAnswer, error) {
	var (
		a      keyAnswer
		stored string
	)
	err := tx.QueryRowContext(ctx, `SELECT set_id, first_index, count, request_hash FROM idempotency_keys WHERE owner = ? AND key = ?`,
		owner, key).Scan(&a.set, &a.first, &a.count, &stored)
	switch {
	case err == sql.ErrNoRows:
		return false, a, nil
	case err != nil:
		return false, a, fmt.Errorf("look up idempotency key: %w", err)
	case stored != "" && stored != hash:
		return true, a, sched.Errorf(sched.ECONFLICT, "idempotency key %q was already used for a different disclose (into set %d): "+
			"a retry must send the same set, name, request flag and tasks; use a new key for new content", key, a.set)
	}
	return true, a, nil
}

// keyAnswer is what the first call with an idempotency key answered.
type keyAnswer struct {
	set          sched.SetID
	first, count int32
}
