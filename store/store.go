// Package store keeps batchd's state in SQLite: task sets, tasks, copies,
// outputs, workers, idempotency keys, users with their hashed tokens, and
// the append-only billing ledger (one charge per requested task, priced;
// corrections are further lines). All
// SQL of batchd lives here. Every state change is one transaction that also
// writes what depends on it (a finished requested task and its bill line, a
// disclose and its idempotency key), so nothing is ever half written.
//
// Store methods return *sched.Error values with a code for every error a
// person can act on; anything else is wrapped with context and is internal.
package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mattn/go-sqlite3"

	"batchd/sched"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// DefaultOutputCap is the default number of bytes kept per output stream.
const DefaultOutputCap = 16 << 20

// DB is the SQLite database of one batchd server.
type DB struct {
	db   *sql.DB // writes (and migrations): BEGIN IMMEDIATE
	ro   *sql.DB // reads: BEGIN DEFERRED, query_only
	Path string  // file path of the database

	// wmu makes write transactions take turns on wconn, db's one
	// connection, taken from the pool at the first write and kept.
	wmu   sync.Mutex
	wconn *sql.Conn
	// gate lets every write pass a staged disclose's queued chunks, and
	// waiting counts the writes waiting for the writer (writegate.go).
	gate    sync.RWMutex
	waiting atomic.Int64
	// writes counts committed write transactions and writeNanos the time
	// they held the writer (BEGIN to COMMIT): the single writer's load.
	writes, writeNanos atomic.Int64
	// writeStmts counts the statements write transactions ran from Go
	// (not their triggers' programs), committed or not.
	writeStmts atomic.Int64
	// lastTx is how the last write transaction's time went (BEGIN, its
	// statements, COMMIT); written and read with wmu held.
	lastTx TxTimes
	// known counts the group commits written from the server's memory
	// (finishknown.go).
	known knownStats

	// ck is the checkpointer's connection (see writerDriverName);
	// committed wakes it after a commit, ckStop ends it, ckDone says it
	// ended. checkpoints and ckErrors count its runs and failures.
	ck             *sql.DB
	committed      chan struct{}
	ckStop, ckDone chan struct{}
	// checkpointAfter is the checkpointer's wait after a commit; nil
	// means time.After (tests replace it, before Open, to say when).
	checkpointAfter       func(time.Duration) <-chan time.Time
	checkpoints, ckErrors atomic.Int64
	logStarts             atomic.Int64 // the log started over by startLogOver
	noLogStart            bool         // tests: leave the log's start to the next commit
	ckLastErr             atomic.Value // string: the last checkpoint's error
	walPages              atomic.Int64 // pages in the WAL at the last checkpoint
	truncates, truncBusy  atomic.Int64 // TRUNCATE checkpoints done, and given up on readers

	// WALLimit is the WAL file's size limit in bytes (see
	// DefaultWALLimit); set it before Open.
	WALLimit int64

	auth authCache // tokens found valid lately (see Authenticate)
	// pilotLosses is how many losses to pilot ends fail a task (pilot.go).
	pilotLosses atomic.Int32
	// arrays keeps task arrays read lately (they never change).
	arrays *arrayCache

	// Now returns the current time; it is read once per transaction so that
	// every row a transaction writes carries the same time. Tests pin it.
	Now func() time.Time
	// OutputCap is the number of bytes kept per stream (stdout, stderr);
	// beyond it output is cut and marked truncated.
	OutputCap int64
	// KeepUserCap is the most bytes of kept files (TaskSpec.Keep) one
	// user stores, all results together (0: no cap); a file over it is
	// listed as not kept, with the reason.
	KeepUserCap int64
	// Prices is what a bill line charges per slot-second and per CPU
	// second; each line records the prices it was written with.
	Prices Prices
	// StageRows is the task rows per chunk of a staged disclose (0:
	// DefaultStageRows; stage.go); set it before the first disclose.
	StageRows int
	// StageChunkFunc, when set, is called before each chunk of a staged
	// disclose, outside the writer (tests hold a disclose between its
	// chunks there).
	StageChunkFunc func(set sched.SetID, chunk int)
	// StageChunkHeldFunc, when set, is called inside each chunk's write
	// transaction, holding the writer (tests make a chunk slow there).
	StageChunkHeldFunc func(set sched.SetID, chunk int)
	// HeartbeatHeldFunc, when set, is called inside a heartbeat's write
	// transaction (HeartbeatWrite), holding the writer, with what it
	// writes (tests make the write slow there, as a slow commit or the
	// disk would, and see which heartbeats were written).
	HeartbeatHeldFunc func(w sched.WorkerID, copies []CopyProgress)
	// BenchSynchronousOff opens the database with synchronous=OFF instead
	// of NORMAL: for a benchmark's ablation only, never a setting (a power
	// loss may lose or corrupt committed transactions). Set before Open.
	BenchSynchronousOff bool
}

// Prices are the ledger's unit prices (in the operator's currency unit).
type Prices struct {
	SlotSecond float64 // per slot-second of the winning copy
	CPUSecond  float64 // per CPU second of the winning copy
}

// Amount is what slot and CPU seconds cost at these prices.
func (p Prices) Amount(slotSeconds, cpuSeconds float64) float64 {
	return slotSeconds*p.SlotSecond + cpuSeconds*p.CPUSecond
}

// driverName is go-sqlite3 with every connection memory-mapping the first
// mmapBytes of the database (read-only mappings; writes still go through
// the WAL): a page there that is not in a connection's cache is then a
// memory read, not a pread system call. Readers' caches go stale whenever
// the writer commits, so this is most of what a read costs.
const driverName = "sqlite3_batchd"

// mmapBytes bounds the mapping. Mapped pages a process has read count in
// its resident size: with the whole file mapped, a restart that reads 10⁶
// queued tasks left 221 MB of the database's pages in the server's RSS
// beside its 99 MB of heap.
const mmapBytes = 64 << 20

// writerDriverName is driverName for the writing connection, which never
// checkpoints the WAL itself: SQLite's automatic checkpoint runs inside
// the COMMIT that takes the WAL past 1,000 pages, copying them into the
// database and syncing it twice while the server's state lock waits on
// that commit (one commit in about fifty, several milliseconds each: the
// tail of a request's way to its start). The checkpointer goroutine (see
// Open) does it beside the writer instead.
const writerDriverName = "sqlite3_batchd_writer"

func init() {
	sql.Register(driverName, &sqlite3.SQLiteDriver{ConnectHook: func(c *sqlite3.SQLiteConn) error {
		_, err := c.Exec(fmt.Sprintf("PRAGMA mmap_size = %d", mmapBytes), nil)
		return err
	}})
	sql.Register(writerDriverName, &sqlite3.SQLiteDriver{ConnectHook: func(c *sqlite3.SQLiteConn) error {
		_, err := c.Exec(fmt.Sprintf("PRAGMA mmap_size = %d; PRAGMA wal_autocheckpoint = 0", mmapBytes), nil)
		return err
	}})
}

// checkpointEvery is how often at most the checkpointer copies the WAL
// into the database, and how long after a commit it waits to; between
// two, the WAL holds the commits since.
const checkpointEvery = 100 * time.Millisecond

// checkpointer copies committed pages from the WAL into the database
// (see checkpointOnce) checkpointEvery after a commit, and so at most
// every checkpointEvery, until stop closes.
//
// It waits before it copies, not after: on an idle server the commit
// that wakes it is a request's, and the decision that starts the
// request's copy commits next, then the copy is forked. A checkpoint at
// once synced and copied the WAL beside them, and when it had copied all
// of it the decision's commit started the log over, which syncs the
// WAL's new header before the fork (perf, bench/clistart.sh BREAKDOWN=1:
// two fsyncs between a request's accept and its fork, one with the
// wait). Under a steady stream of commits it runs as often as before.
func (db *DB) checkpointer(stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	after := db.checkpointAfter
	if after == nil {
		after = time.After
	}
	for {
		select {
		case <-stop:
			return
		case <-db.committed:
		}
		select {
		case <-stop:
			return
		case <-after(checkpointEvery):
		}
		all, err := db.checkpointOnce()
		if err != nil {
			db.ckErrors.Add(1)
			db.ckLastErr.Store(err.Error())
		}
		if all && !db.noLogStart {
			db.startLogOver()
		}
		db.checkpoints.Add(1)
	}
}

// NewDB returns a DB for the file at path; call Open before use.
func NewDB(path string) *DB {
	return &DB{Path: path, Now: time.Now, OutputCap: DefaultOutputCap, WALLimit: DefaultWALLimit, arrays: &arrayCache{}}
}

// Open opens the database file, creating it, and runs pending migrations.
func (db *DB) Open() error {
	if db.Path == "" {
		return sched.Errorf(sched.EINVALID, "no database path")
	}
	if err := os.MkdirAll(filepath.Dir(db.Path), 0o700); err != nil {
		return fmt.Errorf("create data directory: %w", err)
	}
	// Every setting is in the DSN so that it holds on each pooled connection:
	// WAL lets readers run beside the writer; _txlock=immediate takes the
	// write lock at BEGIN so a read-then-write transaction never fails with
	// SQLITE_BUSY on upgrade; synchronous=NORMAL survives kill -9 in WAL;
	// _stmt_cache_size keeps each connection's prepared statements, since
	// the hot paths (a copy's finish, a start) run the same few queries;
	// the writer's holds more, since a group commit's batched statements
	// come in a text per chunk size (valuesrows.go); _mutex=no opens the
	// connection without SQLite's per-connection mutex, taken and released
	// around every API call, since database/sql hands a connection to one
	// goroutine at a time (and the writer's is one, held under wmu).
	dsn := "file:" + db.Path + "?_journal_mode=WAL&_busy_timeout=10000&_txlock=immediate&_foreign_keys=on&_synchronous=NORMAL&_stmt_cache_size=160&_mutex=no"
	if db.BenchSynchronousOff {
		dsn = strings.Replace(dsn, "_synchronous=NORMAL", "_synchronous=OFF", 1)
	}
	sdb, err := sql.Open(writerDriverName, dsn)
	if err != nil {
		return fmt.Errorf("open database: %w", err)
	}
	// Writers are serialized by SQLite anyway, so they share one
	// connection: its page cache stays warm from one transaction to the
	// next. With several, each transaction found its connection's cache
	// stale (another connection had written since) and read its pages
	// again, and a finished copy's UPDATE cost 0.2 ms instead of 15 µs.
	keepConns(sdb, 1)
	db.db = sdb
	if err := db.migrate(context.Background()); err != nil {
		sdb.Close()
		return err
	}
	// Reads have a pool of their own: go-sqlite3 ignores TxOptions, so a
	// "read-only" transaction on the pool above would BEGIN IMMEDIATE and
	// wait for the write lock behind every writer (a 100,000-task
	// disclose held every status, token check and cluster call for
	// seconds). _txlock=deferred takes a WAL snapshot and never waits for
	// a writer; _query_only makes a stray write fail instead of locking.
	rdsn := "file:" + db.Path + "?_busy_timeout=10000&_txlock=deferred&_foreign_keys=on&_query_only=true&_stmt_cache_size=64"
	rdb, err := sql.Open(driverName, rdsn)
	if err != nil {
		sdb.Close()
		return fmt.Errorf("open database for reading: %w", err)
	}
	keepConns(rdb, ReadConns())
	db.ro = rdb
	// The checkpointer's own connection (see writerDriverName); its busy
	// handler is a TRUNCATE checkpoint's bounded wait.
	ck, err := sql.Open(driverName, fmt.Sprintf("file:%s?_busy_timeout=%d", db.Path, truncateWait.Milliseconds()))
	if err != nil {
		rdb.Close()
		sdb.Close()
		return fmt.Errorf("open database for checkpoints: %w", err)
	}
	keepConns(ck, 1)
	db.ck = ck
	db.committed = make(chan struct{}, 1)
	db.ckStop, db.ckDone = make(chan struct{}), make(chan struct{})
	go db.checkpointer(db.ckStop, db.ckDone)
	return nil
}

// keepConns makes p a pool of n connections kept open for good.
func keepConns(p *sql.DB, n int) {
	p.SetMaxOpenConns(n)
	p.SetMaxIdleConns(n)
	p.SetConnMaxLifetime(0)
}

// Close closes the database.
func (db *DB) Close() error {
	if db.db == nil {
		return nil
	}
	var err error
	if db.ck != nil {
		close(db.ckStop)
		<-db.ckDone
		err = db.ck.Close()
		db.ck = nil
	}
	if db.ro != nil {
		err = errors.Join(err, db.ro.Close())
	}
	db.wmu.Lock()
	if db.wconn != nil {
		err = errors.Join(err, db.wconn.Close())
		db.wconn = nil
	}
	db.wmu.Unlock()
	return errors.Join(err, db.db.Close())
}

// migrate runs every embedded migration not yet recorded, each in its own
// transaction, in file-name order.
func (db *DB) migrate(ctx context.Context) error {
	if _, err := db.db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS migrations (name TEXT PRIMARY KEY)`); err != nil {
		return fmt.Errorf("create migrations table: %w", err)
	}
	names, err := fs.Glob(migrationFS, "migrations/*.sql")
	if err != nil {
		return err
	}
	sort.Strings(names)
	for _, name := range names {
		if err := db.migrateFile(ctx, name); err != nil {
			return fmt.Errorf("migration %s: %w", name, err)
		}
	}
	return nil
}

func (db *DB) migrateFile(ctx context.Context, name string) error {
	tx, err := db.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM migrations WHERE name = ?`, name).Scan(&n); err != nil {
		return err
	} else if n > 0 {
		return nil
	}
	buf, err := fs.ReadFile(migrationFS, name)
	if err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, string(buf)); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO migrations (name) VALUES (?)`, name); err != nil {
		return err
	}
	return tx.Commit()
}

// Tx is a transaction with the time it was begun at.
//
// Transactions are BEGIN ... COMMIT on a *sql.Conn rather than sql.Tx:
// database/sql starts a goroutine for every sql.Tx and for every query
// run in one (to roll back or close it when a context is cancelled), and
// mattn/go-sqlite3 one for every statement and every row stepped with a
// cancellable context (to interrupt it). Their wake-ups, two or three
// thread switches per statement, cost more than SQLite did on a copy's
// finish. Statements here run to their end; a write whose context is
// cancelled before it begins does not begin, and loops over many rows
// check the context between rows (canceled).
type Tx struct {
	q      querier
	now    time.Time
	cap    int64  // DB.OutputCap
	keep   int64  // DB.KeepUserCap
	prices Prices // DB.Prices
	arrays *arrayCache
	// pilotLimit is DB.pilotLossLimit() (pilot.go).
	pilotLimit int32
	known      *knownStats // DB's, in a write (finishknown.go)
	// free is the tasks whose free work the write changed (billfree.go).
	free *freeDirty
	// stmts counts the statements the transaction ran (DB.writeStmts).
	stmts int64
	// bg is the transaction's context without its cancellation: its
	// statements run with it, whatever context each is given (nothing
	// below reads a context's values), since context.WithoutCancel
	// allocates at every call: 15 of a group commit's allocations.
	bg context.Context
}

// ctx is the context tx's statements run with (see Tx.bg).
func (tx *Tx) ctx(ctx context.Context) context.Context {
	if tx.bg != nil {
		return tx.bg
	}
	return context.WithoutCancel(ctx)
}

// No joins per task: a statement run once per task (the start's spec read, the
// finish's read) joins no tables. SQLite (3.54, as go-sqlite3 bundles it)
// plans a join with a bound parameter again at every run, which cost more
// than the rest of the finish; it reads the other tables in scalar
// subqueries instead, planned once. For the same reason a read the API
// runs often writes a parameter the planner would look at (a LIMIT, a
// range, a column a partial index covers) as +?: unary plus, a no-op on
// the value, hides it from the planner, which keeps the same index.
// TestNoReprepare and TestNoReprepareReads check this with SQLite's own
// count (sqlite_stmt.reprep).

// querier is what a transaction runs its statements on (*sql.Conn).
type querier interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
	PrepareContext(ctx context.Context, query string) (*sql.Stmt, error)
}

// ExecContext runs one statement of the transaction (see Tx).
func (tx *Tx) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	tx.stmts++
	return tx.q.ExecContext(tx.ctx(ctx), query, args...)
}

// QueryContext runs one query of the transaction (see Tx).
func (tx *Tx) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	tx.stmts++
	return tx.q.QueryContext(tx.ctx(ctx), query, args...)
}

// QueryRowContext runs one query of the transaction (see Tx).
func (tx *Tx) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	tx.stmts++
	return tx.q.QueryRowContext(tx.ctx(ctx), query, args...)
}

// PrepareContext prepares a statement for the transaction's rows (see Tx;
// run it with rowCtx).
func (tx *Tx) PrepareContext(ctx context.Context, query string) (*sql.Stmt, error) {
	return tx.q.PrepareContext(tx.ctx(ctx), query)
}

// rawRows runs a query of the transaction and calls fn with each row's
// values as the driver gives them (int64, float64, string or []byte; see
// asInt, asFloat, asString), valid only during the call. It skips
// database/sql's conversions, for queries of very many rows.
func (tx *Tx) rawRows(ctx context.Context, query string, fn func([]driver.Value) error) error {
	return tx.rawRowsArgs(ctx, query, nil, fn)
}

// asInt, asFloat and asString read a driver value of an INTEGER, REAL or
// TEXT column (SQLite may hand back either number type for a number).
func asInt(v driver.Value) int64 {
	switch x := v.(type) {
	case int64:
		return x
	case float64:
		return int64(x)
	}
	return 0
}

func asFloat(v driver.Value) float64 {
	switch x := v.(type) {
	case float64:
		return x
	case int64:
		return float64(x)
	}
	return 0
}

func asString(v driver.Value) string {
	switch x := v.(type) {
	case string:
		return x
	case []byte:
		return string(x)
	}
	return ""
}

// read runs fn in a read-only transaction (on the reading pool, see Open)
// so that it sees one snapshot without waiting for writers.
func (db *DB) read(ctx context.Context, fn func(tx *Tx) error) error {
	c, err := db.ro.Conn(ctx)
	if err != nil {
		return translate(err)
	}
	defer c.Close()
	bg := context.WithoutCancel(ctx)
	if _, err := c.ExecContext(bg, "BEGIN"); err != nil {
		discard(c)
		return translate(err)
	}
	defer func() {
		if _, err := c.ExecContext(bg, "ROLLBACK"); err != nil {
			discard(c) // still in a transaction, or broken: not back to the pool
		}
	}()
	return translate(fn(&Tx{q: c, now: db.Now().UTC(), cap: db.OutputCap, keep: db.KeepUserCap, prices: db.Prices, arrays: db.arrays, pilotLimit: db.pilotLossLimit(),
		bg: bg}))
}

// write runs fn in a write transaction (BEGIN IMMEDIATE, one at a time)
// and commits it when fn succeeds; otherwise, or if fn panics, it rolls
// back.
func (db *DB) write(ctx context.Context, fn func(tx *Tx) error) (err error) {
	if err := ctx.Err(); err != nil {
		return err
	}
	unlock := db.lockWriter()
	defer unlock()
	return db.writeHeld(ctx, fn)
}

// writeHeld is write's transaction, run by a caller that holds wmu.
func (db *DB) writeHeld(ctx context.Context, fn func(tx *Tx) error) (err error) {
	began := time.Now()
	defer func() { db.writeNanos.Add(int64(time.Since(began))) }()
	if db.wconn == nil {
		if db.wconn, err = db.db.Conn(ctx); err != nil {
			db.wconn = nil
			return translate(err)
		}
		if err := db.walLimitPragma(ctx); err != nil {
			db.dropWriteConn()
			return translate(err)
		}
	}
	c, bg := db.wconn, context.WithoutCancel(ctx)
	db.lastTx = TxTimes{}
	if _, err := c.ExecContext(bg, "BEGIN IMMEDIATE"); err != nil {
		db.dropWriteConn()
		return translate(err)
	}
	done := false
	defer func() {
		if done {
			return
		}
		if _, rerr := c.ExecContext(bg, "ROLLBACK"); rerr != nil {
			db.dropWriteConn()
		}
	}()
	begun := time.Now()
	db.lastTx.Begin = begun.Sub(began)
	tx := &Tx{q: c, now: db.Now().UTC(), cap: db.OutputCap, keep: db.KeepUserCap, prices: db.Prices, arrays: db.arrays, pilotLimit: db.pilotLossLimit(),
		known: &db.known, bg: bg}
	// The statements, COMMIT's and ROLLBACK's aside.
	defer func() { db.writeStmts.Add(tx.stmts) }()
	if err := fn(tx); err != nil {
		return translate(err)
	}
	if err := tx.refreshFree(ctx); err != nil {
		return translate(err)
	}
	ran := time.Now()
	db.lastTx.Statements = ran.Sub(begun)
	if _, err := c.ExecContext(bg, "COMMIT"); err != nil {
		return translate(err) // rolled back above
	}
	db.lastTx.Commit = time.Since(ran)
	done = true
	db.writes.Add(1)
	select {
	case db.committed <- struct{}{}: // the checkpointer's turn
	default:
	}
	return nil
}

// CheckpointStats returns how many WAL checkpoints ran, how many failed
// (and the last failure's error), and how many pages the WAL held at the
// last one: a WAL that keeps growing means checkpoints cannot keep up or
// fail.
func (db *DB) CheckpointStats() (runs, failed int64, lastErr string, walPages int64) {
	lastErr, _ = db.ckLastErr.Load().(string)
	return db.checkpoints.Load(), db.ckErrors.Load(), lastErr, db.walPages.Load()
}

// WriteStats returns how many write transactions committed and how long,
// in seconds, write transactions held the single writer (committed or
// not): the writer is saturated when the second grows as fast as the
// wall clock.
func (db *DB) WriteStats() (commits int64, busySeconds float64) {
	return db.writes.Load(), float64(db.writeNanos.Load()) / 1e9
}

// WriteStatements returns how many statements write transactions ran
// from Go (BEGIN, COMMIT and ROLLBACK aside; a trigger's work counts in
// the statement that fired it).
func (db *DB) WriteStatements() int64 { return db.writeStmts.Load() }

// dropWriteConn closes a write connection that may be left in a
// transaction; the next write takes a fresh one. Requires wmu.
func (db *DB) dropWriteConn() {
	discard(db.wconn)
	db.wconn.Close()
	db.wconn = nil
}

// discard makes c's connection leave the pool when c is closed.
func discard(c *sql.Conn) {
	_ = c.Raw(func(any) error { return driver.ErrBadConn })
}

// translate turns driver errors into coded errors where a person can act on
// them; others pass through, wrapped by their callers with context.
func translate(err error) error {
	if err == nil {
		return nil
	}
	var se *sched.Error
	if errors.As(err, &se) {
		return err
	}
	if errors.Is(err, sql.ErrNoRows) {
		return sched.Errorf(sched.ENOTFOUND, "not found")
	}
	var e sqlite3.Error
	if errors.As(err, &e) {
		switch e.ExtendedCode {
		case sqlite3.ErrConstraintUnique, sqlite3.ErrConstraintPrimaryKey:
			return sched.Errorf(sched.ECONFLICT, "already exists")
		case sqlite3.ErrConstraintForeignKey:
			return sched.Errorf(sched.ENOTFOUND, "refers to something that does not exist")
		}
		switch e.Code {
		case sqlite3.ErrBusy, sqlite3.ErrLocked:
			return sched.Errorf(sched.EUNAVAILABLE, "database busy, try again")
		case sqlite3.ErrFull:
			return sched.Errorf(sched.ERESOURCEEXHAUSTED, "disk full")
		}
	}
	return err
}

// nanos converts a time to the stored form (0 for the zero time). A time
// before 1678 or after 2262, which Unix nanoseconds cannot hold, becomes
// the smallest or largest int64 (UnixNano would overflow and wrap), so
// that a range bound far away still includes everything on its side.
func nanos(t time.Time) int64 {
	switch {
	case t.IsZero():
		return 0
	case t.Before(minNanos):
		return math.MinInt64
	case t.After(maxNanos):
		return math.MaxInt64
	}
	return t.UnixNano()
}

// minNanos and maxNanos are the times Unix nanoseconds can hold.
var minNanos, maxNanos = time.Unix(0, math.MinInt64), time.Unix(0, math.MaxInt64)

// fromNanos converts the stored form back (the zero time for 0).
func fromNanos(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}

// seconds converts a time to sched.Time (Unix seconds).
func seconds(t time.Time) sched.Time {
	if t.IsZero() {
		return 0
	}
	return float64(t.UnixNano()) / 1e9
}

// placeholders returns "?,?,…" for n arguments.
func placeholders(n int) string {
	return strings.TrimSuffix(strings.Repeat("?,", n), ",")
}

// plusPlaceholders is placeholders written +? (see "No joins per task").
func plusPlaceholders(n int) string {
	return strings.TrimSuffix(strings.Repeat("+?,", n), ",")
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// rowCtx is ctx for the prepared statements a loop runs once per row (a
// disclose of 100,000 tasks, a request or cancel naming as many; Tx's own
// methods do the same for every statement): mattn/go-sqlite3
// runs each statement whose context can be canceled on a goroutine of its
// own and waits on a channel for it, which was most of such a call's
// time. The loop checks ctx itself between rows (canceled).
func rowCtx(ctx context.Context) context.Context { return context.WithoutCancel(ctx) }

// canceled returns ctx's error at every 1,024th row i of a loop run with
// rowCtx, so that it still stops soon after its caller gives up.
func canceled(ctx context.Context, i int) error {
	if i%1024 != 0 {
		return nil
	}
	return ctx.Err()
}
