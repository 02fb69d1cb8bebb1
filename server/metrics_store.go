package server

import (
	"github.com/prometheus/client_golang/prometheus"

	"batchd/store"
)

// storeFileCollectors are the sizes of the store's files on disk, the
// WAL truncations that keep the log's file bounded, and SQLite's memory
// and connections.
func storeFileCollectors(db *store.DB) []prometheus.Collector {
	return []prometheus.Collector{
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "batchd_store_wal_file_bytes",
			Help: "Size of the SQLite WAL file on disk: its high-water mark since it was last cut back (readers holding old snapshots let it grow past the limit)."},
			func() float64 { return float64(db.WALFileBytes()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "batchd_store_wal_file_limit_bytes",
			Help: "The size the WAL file is cut back to once no reader needs its pages (journal_size_limit)."},
			func() float64 { return float64(db.WALLimit) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "batchd_store_db_file_bytes",
			Help: "Size of the SQLite database file on disk, the WAL not included."},
			func() float64 { return float64(db.FileBytes()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "batchd_store_wal_truncations_total",
			Help: "TRUNCATE checkpoints that emptied a WAL file grown past its limit."},
			func() float64 { n, _ := db.TruncateStats(); return float64(n) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "batchd_store_wal_truncations_busy_total",
			Help: "TRUNCATE checkpoints given up because readers did not end within their bounded wait (the next commit tries again)."},
			func() float64 { _, n := db.TruncateStats(); return float64(n) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "batchd_store_sqlite_memory_bytes",
			Help: "Bytes SQLite has allocated (page caches, prepared statements, sorts; all connections): anonymous memory outside the Go heap."},
			func() float64 { n, _ := store.SQLiteMemory(); return float64(n) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "batchd_store_sqlite_memory_highwater_bytes",
			Help: "The most bytes SQLite had allocated at once since the server started."},
			func() float64 { _, n := store.SQLiteMemory(); return float64(n) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "batchd_store_read_conns",
			Help: "The store's reading connections: with the writer's and the checkpointer's, the most SQLite calls (and the OS threads they hold) at once."},
			func() float64 { return float64(store.ReadConns()) }),
	}
}
