package store

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/base32"
	"encoding/hex"
	"fmt"
	"math"
	"regexp"
	"strings"
	"time"

	"batchd/sched"
)

// Roles a user may have.
const (
	// RoleUser discloses, requests, cancels and reads its own task sets.
	RoleUser = "user"
	// RoleAdmin does what a user does on everyone's task sets, reads every
	// bill and manages users.
	RoleAdmin = "admin"
	// RoleWorker may call only the worker service.
	RoleWorker = "worker"
)

// TokenPrefix starts every token, so that a leaked one is easy to spot.
const TokenPrefix = "bd_"

// tokenBytes is the randomness of a token: 160 bits.
const tokenBytes = 20

// User is one user of batchd.
type User struct {
	Name      string
	Role      string
	CreatedAt time.Time
	RevokedAt time.Time // zero while the user may call
	Tokens    int       // live tokens
	Weight    float64   // fair-share weight (default 1)
	// Worker is, for a pilot's token (MintPilotToken), the one worker name
	// the caller may speak for; "" for a user's own token.
	Worker sched.WorkerID
	// ExpiresAt is when a pilot's token stops working (zero: never).
	ExpiresAt time.Time
}

// validName is what a user name may look like (it also names workers'
// owners and appears in bills and logs).
var validName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$`)

// NewToken returns a fresh random token ("bd_" and 32 base32 characters).
func NewToken() (string, error) {
	b := make([]byte, tokenBytes)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("random token: %w", err)
	}
	return TokenPrefix + strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b)), nil
}

// HashToken is the stored form of a token: hex SHA-256.
func HashToken(token string) string {
	h := sha256.Sum256([]byte(token))
	return hex.EncodeToString(h[:])
}

// AddUserInput creates a user with a first token.
type AddUserInput struct {
	Name string
	Role string // RoleUser (default), RoleAdmin or RoleWorker
	// Token is the first token, from NewToken ("": AddUser mints one).
	// The server mints the first admin's token itself so that it can
	// write it to disk before the user exists.
	Token string
	// Weight is the fair-share weight (0: 1).
	Weight float64
}

// AddUser creates a user and returns it with its first token, which is
// shown only now (the store keeps its hash). Errors: EINVALID (bad name or
// role), ECONFLICT (the name exists, revoked or not).
func (db *DB) AddUser(ctx context.Context, in AddUserInput) (User, string, error) {
	if in.Role == "" {
		in.Role = RoleUser
	}
	if !validName.MatchString(in.Name) {
		return User{}, "", sched.Errorf(sched.EINVALID, "bad user name %q: 1 to 64 letters, digits, '.', '_', '@' or '-'", in.Name)
	}
	if in.Role != RoleUser && in.Role != RoleAdmin && in.Role != RoleWorker {
		return User{}, "", sched.Errorf(sched.EINVALID, "bad role %q: user, admin or worker", in.Role)
	}
	if in.Weight == 0 {
		in.Weight = 1
	}
	if !(in.Weight > 0) || math.IsInf(in.Weight, 0) {
		return User{}, "", sched.Errorf(sched.EINVALID, "weight %v must be a positive number", in.Weight)
	}
	token := in.Token
	if token == "" {
		var err error
		if token, err = NewToken(); err != nil {
			return User{}, "", err
		}
	} else if !strings.HasPrefix(token, TokenPrefix) || len(token) < len(TokenPrefix)+tokenBytes {
		return User{}, "", sched.Errorf(sched.EINVALID, "a token starts with %q and carries at least %d characters", TokenPrefix, tokenBytes)
	}
	u := User{Name: in.Name, Role: in.Role, Tokens: 1, Weight: in.Weight}
	err := db.write(ctx, func(tx *Tx) error {
		u.CreatedAt = tx.now
		if _, err := tx.ExecContext(ctx, `INSERT INTO users (name, role, created_at, weight) VALUES (?, ?, ?, ?)`, in.Name, in.Role, nanos(tx.now), in.Weight); err != nil {
			if sched.ErrorCode(translate(err)) == sched.ECONFLICT {
				return sched.Errorf(sched.ECONFLICT, "user %q already exists", in.Name)
			}
			return fmt.Errorf("add user: %w", err)
		}
		return insertToken(ctx, tx, in.Name, token)
	})
	if err != nil {
		return User{}, "", err
	}
	return u, token, nil
}

// NewUserToken mints another token for a live user (shown only now).
// Errors: ENOTFOUND (no such live user).
func (db *DB) NewUserToken(ctx context.Context, name string) (string, error) {
	token, err := NewToken()
	if err != nil {
		return "", err
	}
	err = db.write(ctx, func(tx *Tx) error {
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM users WHERE name = ? AND revoked_at = 0`, name).Scan(&n); err != nil {
			return err
		}
		if n == 0 {
			return sched.Errorf(sched.ENOTFOUND, "no user %q", name)
		}
		return insertToken(ctx, tx, name, token)
	})
	return token, err
}

func insertToken(ctx context.Context, tx *Tx, user, token string) error {
	if _, err := tx.ExecContext(ctx, `INSERT INTO tokens (hash, user, prefix, created_at) VALUES (?, ?, ?, ?)`,
		HashToken(token), user, token[:len(TokenPrefix)+4], nanos(tx.now)); err != nil {
		return fmt.Errorf("add token: %w", err)
	}
	return nil
}

// RevokeUser revokes a user and all its tokens; their next call fails.
// Errors: ENOTFOUND (no such user, or already revoked).
func (db *DB) RevokeUser(ctx context.Context, name string) error {
	return db.revoked(db.write(ctx, func(tx *Tx) error {
		r, err := tx.ExecContext(ctx, `UPDATE users SET revoked_at = ? WHERE name = ? AND revoked_at = 0`, nanos(tx.now), name)
		if err != nil {
			return fmt.Errorf("revoke user: %w", err)
		}
		if n, _ := r.RowsAffected(); n == 0 {
			return sched.Errorf(sched.ENOTFOUND, "no live user %q", name)
		}
		if _, err := tx.ExecContext(ctx, `UPDATE tokens SET revoked_at = ? WHERE user = ? AND revoked_at = 0`, nanos(tx.now), name); err != nil {
			return fmt.Errorf("revoke tokens: %w", err)
		}
		return nil
	}))
}

// ListUsers returns every user, revoked ones too, by name.
func (db *DB) ListUsers(ctx context.Context) ([]User, error) {
	var out []User
	err := db.read(ctx, func(tx *Tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT u.name, u.role, u.created_at, u.revoked_at,
			(SELECT COUNT(*) FROM tokens t WHERE t.user = u.name AND t.revoked_at = 0), u.weight FROM users u ORDER BY u.name`)
		if err != nil {
			return fmt.Errorf("list users: %w", err)
		}
		defer rows.Close()
		for rows.Next() {
			var (
				u       User
				at, rev int64
			)
			if err := rows.Scan(&u.Name, &u.Role, &at, &rev, &u.Tokens, &u.Weight); err != nil {
				return err
			}
			u.CreatedAt, u.RevokedAt = fromNanos(at), fromNanos(rev)
			out = append(out, u)
		}
		return rows.Err()
	})
	return out, err
}

// CountUsers returns how many users exist (revoked ones included).
func (db *DB) CountUsers(ctx context.Context) (int, error) {
	var n int
	err := db.read(ctx, func(tx *Tx) error {
		return tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM users`).Scan(&n)
	})
	return n, err
}

// authenticate reads the live user a token (by its hash) belongs to.
// Errors: EUNAUTHENTICATED (unknown or revoked token, or revoked user).
func (db *DB) authenticate(ctx context.Context, hash string) (User, error) {
	var u User
	err := db.read(ctx, func(tx *Tx) error {
		var at int64
		err := tx.QueryRowContext(ctx, `SELECT u.name, u.role, u.created_at FROM tokens t JOIN users u ON u.name = t.user
			WHERE t.hash = ? AND t.revoked_at = 0 AND u.revoked_at = 0`, hash).Scan(&u.Name, &u.Role, &at)
		if err == sql.ErrNoRows {
			// Not a user's token: perhaps a pilot's.
			u, err = authenticatePilot(ctx, tx, hash)
			return err
		}
		u.CreatedAt = fromNanos(at)
		return err
	})
	return u, err
}

// ClaimWorker binds the worker name to the worker user owner on its first
// registration and checks the binding afterwards. Errors: EPERMISSION (the
// name belongs to another worker user).
func (db *DB) ClaimWorker(ctx context.Context, worker sched.WorkerID, owner string) error {
	return db.write(ctx, func(tx *Tx) error {
		if _, err := tx.ExecContext(ctx, `INSERT OR IGNORE INTO worker_owners (worker, owner) VALUES (?, ?)`, worker, owner); err != nil {
			return fmt.Errorf("claim worker: %w", err)
		}
		var got string
		if err := tx.QueryRowContext(ctx, `SELECT owner FROM worker_owners WHERE worker = ?`, worker).Scan(&got); err != nil {
			return fmt.Errorf("read worker owner: %w", err)
		}
		if got != owner {
			return sched.Errorf(sched.EPERMISSION, "worker %q belongs to another worker token", worker)
		}
		return nil
	})
}

// WorkerOwner returns the worker user a worker name is bound to.
// Errors: ENOTFOUND (never registered).
func (db *DB) WorkerOwner(ctx context.Context, worker sched.WorkerID) (string, error) {
	var owner string
	err := db.read(ctx, func(tx *Tx) error {
		err := tx.QueryRowContext(ctx, `SELECT owner FROM worker_owners WHERE worker = ?`, worker).Scan(&owner)
		if err == sql.ErrNoRows {
			return sched.Errorf(sched.ENOTFOUND, "unknown worker %q", worker)
		}
		return err
	})
	return owner, err
}

// SetOwner returns the owner of a task set. Errors: ENOTFOUND.
func (db *DB) SetOwner(ctx context.Context, id sched.SetID) (string, error) {
	var owner string
	err := db.read(ctx, func(tx *Tx) error {
		err := tx.QueryRowContext(ctx, `SELECT owner FROM task_sets WHERE id = ? AND staged = 0`, id).Scan(&owner)
		if err == sql.ErrNoRows {
			return sched.Errorf(sched.ENOTFOUND, "no task set %d", id)
		}
		return err
	})
	return owner, err
}

// UserLoad is what a user holds open, for the abuse limits.
type UserLoad struct {
	OpenSets    int // sets with a task disclosed or requested (not yet run to the end)
	QueuedTasks int // tasks disclosed or requested, not yet executed, finished or canceled
}

// GetUserLoad counts the owner's open sets and unfinished tasks.
func (db *DB) GetUserLoad(ctx context.Context, owner string) (UserLoad, error) {
	var l UserLoad
	err := db.read(ctx, func(tx *Tx) error {
		return tx.QueryRowContext(ctx, userLoadQuery, owner).Scan(&l.OpenSets, &l.QueuedTasks)
	})
	return l, err
}

// userLoadQuery reads the per-set counts (migration 0006), the owner's
// open sets only: its WHERE is the partial index task_sets_open_owner's
// (migration 0015), so a disclose does not walk every set the user ever
// had (TestUserLoadUsesOpenIndex).
const userLoadQuery = `SELECT COUNT(*), COALESCE(SUM(n_disclosed + n_requested), 0) FROM task_sets
	WHERE owner = ? AND n_disclosed + n_requested > 0`
