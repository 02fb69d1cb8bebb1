package store

// The limits of batchd, in one place. The server checks the per-call ones
// before it opens a transaction; the store checks the per-set ones inside it.
const (
	// MaxTasksPerCall is the most tasks one Disclose call may carry
	// (ResourceExhausted beyond it).
	MaxTasksPerCall = 200_000
	// MaxTasksPerSet is the most tasks a set may hold after any append
	// (ResourceExhausted beyond it).
	MaxTasksPerSet = 1_000_000
	// MaxArgs is the most argv entries of one task (ResourceExhausted).
	MaxArgs = 1024
	// MaxSpecBytes bounds the bytes of one task's argv, env and directory
	// together (ResourceExhausted).
	MaxSpecBytes = 256 << 10
	// MaxNameBytes bounds a task set's name (InvalidArgument).
	MaxNameBytes = 1024
	// MaxIdempotencyKeyBytes bounds an idempotency key (InvalidArgument).
	MaxIdempotencyKeyBytes = 256
	// MaxIndexesPerCall is the most task indexes one Request or Cancel call
	// may name (ResourceExhausted beyond it).
	MaxIndexesPerCall = 1_000_000
	// DefaultTaskPage and MaxTaskPage bound a GetTaskSet page of tasks.
	DefaultTaskPage, MaxTaskPage = 1000, 10000
	// DefaultSetPage and MaxSetPage bound a ListTaskSets page.
	DefaultSetPage, MaxSetPage = 100, 1000
	// DefaultBillPage and MaxBillPage bound a GetBill page of lines.
	DefaultBillPage, MaxBillPage = 1000, 10000
	// MaxRequestBytes bounds one request message (ResourceExhausted beyond
	// it); the server raises it to fit two output streams of its cap.
	MaxRequestBytes = 256 << 20
	// DefaultOutputRead is the most bytes per stream GetOutput returns when
	// no limit is given.
	DefaultOutputRead = 4 << 20
	// MaxOutputOffset bounds GetOutput's offset and limit (InvalidArgument
	// beyond): 1 TiB, far past any kept stream, and far from int64 overflow.
	MaxOutputOffset = 1 << 40
	// MaxSeconds bounds every number of seconds a request carries (a task's
	// estimate, timeout and deadline, a worker's CPU and run seconds):
	// about 31 years, well inside a time.Duration (InvalidArgument beyond).
	MaxSeconds = 1e9
)
