package server

import (
	"math"
	"strconv"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"batchd/sched"
	"batchd/store"
)

// This file checks the integer and time fields of requests at the edge:
// a value the code cannot represent, or that can never be valid, is
// EINVALID with a message naming the field, before any store call. Page
// sizes above a page's maximum are clamped (documented), not refused.

// checkSetID refuses a negative set id (0 is "none": a new set, no filter).
func checkSetID(field string, v int64) error {
	if v < 0 {
		return sched.Errorf(sched.EINVALID, "%s = %d: set ids are positive", field, v)
	}
	return nil
}

// checkIndex refuses a task index no set can hold.
func checkIndex(field string, v int32) error {
	if v < 0 || v >= store.MaxTasksPerSet {
		return sched.Errorf(sched.EINVALID, "%s = %d: task indexes run from 0 to %d", field, v, store.MaxTasksPerSet-1)
	}
	return nil
}

// checkIndexes checks every index of a Request or Cancel.
func checkIndexes(idx []int32) error {
	for i, v := range idx {
		if v < 0 || v >= store.MaxTasksPerSet {
			return checkIndex("indexes["+strconv.Itoa(i)+"]", v)
		}
	}
	return nil
}

// checkPageSize refuses a negative page size (0 is the default size).
func checkPageSize(v int32) error {
	if v < 0 {
		return sched.Errorf(sched.EINVALID, "page_size = %d must not be negative (0 = the default page)", v)
	}
	return nil
}

// checkOutputRange refuses a GetOutput offset or limit that is negative or
// beyond store.MaxOutputOffset (no stream is that long; larger values
// overflowed the byte range before).
func checkOutputRange(offset, limit int64) error {
	for _, f := range []struct {
		name string
		v    int64
	}{{"offset", offset}, {"limit", limit}} {
		if f.v < 0 || f.v > store.MaxOutputOffset {
			return sched.Errorf(sched.EINVALID, "%s = %d: must be between 0 and %d bytes", f.name, f.v, int64(store.MaxOutputOffset))
		}
	}
	return nil
}

// timeArg converts an optional timestamp field (nil: the zero time),
// refusing one outside what google.protobuf.Timestamp allows (years 1 to
// 9999, nanos 0 to 999,999,999).
func timeArg(field string, t *timestamppb.Timestamp) (time.Time, error) {
	if t == nil {
		return time.Time{}, nil
	}
	if err := t.CheckValid(); err != nil {
		return time.Time{}, sched.Errorf(sched.EINVALID, "%s is not a valid timestamp: seconds must fall in the years 1 to 9999 and nanos in 0 to 999,999,999", field)
	}
	return t.AsTime(), nil
}

// validSeconds says whether a number of seconds is finite, not negative and
// at most store.MaxSeconds (what a time.Duration holds, with room).
func validSeconds(v float64) bool { return v >= 0 && v <= store.MaxSeconds && !math.IsNaN(v) }
