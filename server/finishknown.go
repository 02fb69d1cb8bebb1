// The server's memory of the copies it started, given to their ends: the
// store's group commit then writes a copy's end without reading the copy
// and its task first, and its writes refuse a memory gone stale
// (store.FinishKnown).

package server

import (
	"batchd/sched"
	"batchd/store"
)

// knownCopies holds what each started copy's end needs, by copy, under
// Server.mu. An entry leaves with its copy's first report.
type knownCopies map[sched.CopyID]store.FinishKnown

// knownCopiesMax bounds the memory: a copy whose end is never reported
// (lost with its worker) would stay in it. Past the bound the memory
// starts again empty, and ends it lacks are read. 131,072 entries of
// about 60 bytes with the map's own (8 MB) hold every copy 32 times over
// of the 4,096 slots docs/scaling.md measures.
const knownCopiesMax = 1 << 17

// remember records the copies started. Call with mu held.
func (k *knownCopies) remember(started []store.Started) {
	if *k == nil || len(*k)+len(started) > knownCopiesMax {
		*k = make(knownCopies, len(started))
	}
	for _, st := range started {
		(*k)[st.Decision.Copy] = st.Known
	}
}

// killed marks a copy the scheduler ordered killed: its end goes one by
// one, not in the batch it would fail (store.FinishKnown.Killed). Under
// speculation the loser often ends by itself before the kill reaches it,
// and its memory, taken before its task was won, is stale. Call with mu
// held.
func (k knownCopies) killed(id sched.CopyID) {
	if kn, ok := k[id]; ok {
		kn.Killed = true
		k[id] = kn
	}
}

// give gives each report the memory of its copy, and forgets it: a report
// sent again (its commit failed) is read. Call with mu held.
func (k knownCopies) give(ins []store.FinishInput) {
	for i := range ins {
		if kn, ok := k[ins[i].Copy]; ok {
			ins[i].Known = &kn
			delete(k, ins[i].Copy)
		}
	}
}
