package server

import (
	rmetrics "runtime/metrics"
	"time"
)

// trimEvery is how often the server looks at the memory and the threads
// it holds and does not use (trimMemory, trimThreads).
const trimEvery = 15 * time.Second

// trimFloor is the free heap never worth a forced collection.
const trimFloor = 64 << 20

// shouldTrim says whether the heap the runtime holds (objects, live or
// not yet collected, and freed memory it keeps) is worth a collection
// that returns the excess: more than the live heap (as of the last
// collection) by at least trimFloor and by at least half of it.
func shouldTrim(held, live uint64) bool {
	return held >= live+trimFloor && held >= live+live/2
}

// trimMemory returns freed heap to the system after a burst. Go keeps freed
// heap for reuse up to about twice the live heap and gives the rest back
// over minutes: after ten 100,000-task discloses a server held 244 MB for
// 120 MB of live heap (233 bytes of RSS per queued task). A check is one
// read of the runtime's metrics; a trim is one full collection
// (Config.GC's FreeOSMemory: none without one), at most every trimEvery,
// and only while that much more than is live is held.
func (s *Server) trimMemory() {
	samples := []rmetrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/memory/classes/heap/free:bytes"},
		{Name: "/gc/heap/live:bytes"}}
	t := time.NewTicker(trimEvery)
	defer t.Stop()
	var ckFailed int64
	for {
		select {
		case <-s.done:
			return
		case <-t.C:
		}
		trimThreads()
		// The store's checkpoints run beside the writer and cannot report
		// to a caller: say here when they fail, as the WAL then grows.
		if _, failed, lastErr, walPages := s.db.CheckpointStats(); failed > ckFailed {
			s.log.Warn("WAL checkpoints fail; the WAL grows until they succeed", "failed", failed-ckFailed, "err", lastErr, "wal_pages", walPages)
			ckFailed = failed
		}
		rmetrics.Read(samples)
		for _, v := range samples {
			if v.Value.Kind() != rmetrics.KindUint64 {
				return // a runtime without these metrics
			}
		}
		if shouldTrim(samples[0].Value.Uint64()+samples[1].Value.Uint64(), samples[2].Value.Uint64()) {
			s.cfg.GC.FreeOSMemory()
		}
	}
}

// GCPolicy steers the process's garbage collector around the server's big,
// short-lived allocations. The collector's settings belong to the process,
// not to a library: the server changes nothing by itself, and a program
// that wants this passes one as Config.GC (cmd/batchd serve does).
type GCPolicy interface {
	// Tighten makes the collector run more often until restore is called:
	// a DiscloseStream past tightGCBytes holds its whole set while it
	// stores it, and the store's encoding makes garbage. Calls overlap.
	Tighten() (restore func())
	// Loosen lets the collector run less often until restore is called,
	// which gives the garbage back to the system: the snapshot the
	// scheduler is rebuilt from is read once and dropped.
	Loosen() (restore func())
	// FreeOSMemory collects and returns freed heap to the system.
	FreeOSMemory()
}

// noGC is the GCPolicy that leaves the collector alone.
type noGC struct{}

func (noGC) Tighten() func() { return func() {} }
func (noGC) Loosen() func()  { return func() {} }
func (noGC) FreeOSMemory()   {}
