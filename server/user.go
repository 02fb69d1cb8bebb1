package server

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	batchv1 "batchd/proto/batch/v1"
	"batchd/sched"
	"batchd/store"
)

// AdminTokenFile is the file in the data directory that holds the first
// admin's token (mode 0600), written on first start.
const AdminTokenFile = "admin.token"

// FirstAdmin is the name of the admin created on first start.
const FirstAdmin = "admin"

// firstAdmin creates the admin user and writes its token to
// DataDir/admin.token (0600) when the store has no user yet, so that
// batchctl on this machine works with no flags. The file is written before
// the user is committed: a crash in between leaves no user, and the next
// start writes a new token, instead of an admin whose token nobody has.
func (s *Server) firstAdmin(ctx context.Context) error {
	n, err := s.db.CountUsers(ctx)
	if err != nil || n > 0 {
		return err
	}
	path := filepath.Join(s.cfg.DataDir, AdminTokenFile)
	token, err := store.NewToken()
	if err != nil {
		return err
	}
	if err := writeSecret(path, token); err != nil {
		return fmt.Errorf("write admin token: %w", err)
	}
	if _, _, err := s.db.AddUser(ctx, store.AddUserInput{Name: FirstAdmin, Role: store.RoleAdmin, Token: token}); err != nil {
		return fmt.Errorf("create first admin: %w", err)
	}
	s.adminToken = token
	s.log.Info("created admin user; token written", "file", path)
	return nil
}

// writeSecret writes data to path with mode 0600, atomically. The
// temporary file is created afresh (O_EXCL): a leftover one, or one
// planted with a looser mode or as a symlink, is removed, not reused.
func writeSecret(path, data string) error {
	tmp := path + ".tmp"
	if err := os.Remove(tmp); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(data + "\n"); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// LocalWorkerToken is a worker token that lives only in this process, for
// the worker slots embedded in batchd serve. It is never stored or printed.
func (s *Server) LocalWorkerToken() string { return s.localWorkerToken }

// AdminToken is the first admin's token when this start created it ("" on
// later starts; it is in DataDir/admin.token).
func (s *Server) AdminToken() string { return s.adminToken }

// userHandler implements UserService (admins only, except WhoAmI).
type userHandler struct{ s *Server }

func userToProto(u store.User) *batchv1.User {
	out := &batchv1.User{Name: u.Name, Role: u.Role, CreatedAt: ts(u.CreatedAt), Tokens: int32(u.Tokens), Weight: u.Weight}
	if !u.RevokedAt.IsZero() {
		out.RevokedAt = ts(u.RevokedAt)
	}
	return out
}

// AddUser creates a user and returns its first token.
func (h userHandler) AddUser(ctx context.Context, req *batchv1.AddUserRequest) (*batchv1.AddUserResponse, error) {
	u, token, err := h.s.db.AddUser(ctx, store.AddUserInput{Name: req.Name, Role: req.Role, Weight: req.Weight})
	if err != nil {
		return nil, err
	}
	if u.Weight != 1 {
		h.s.setSchedWeight(u.Name, u.Weight)
	}
	h.s.log.InfoContext(ctx, "user added", "user", u.Name, "role", u.Role, "by", callerFrom(ctx))
	return &batchv1.AddUserResponse{User: userToProto(u), Token: token}, nil
}

// ListUsers lists every user.
func (h userHandler) ListUsers(ctx context.Context, _ *batchv1.ListUsersRequest) (*batchv1.ListUsersResponse, error) {
	us, err := h.s.db.ListUsers(ctx)
	if err != nil {
		return nil, err
	}
	out := &batchv1.ListUsersResponse{}
	for _, u := range us {
		out.Users = append(out.Users, userToProto(u))
	}
	return out, nil
}

// RevokeUser revokes a user and its tokens. An admin cannot revoke itself
// (FailedPrecondition), so that one admin always remains.
func (h userHandler) RevokeUser(ctx context.Context, req *batchv1.RevokeUserRequest) (*batchv1.RevokeUserResponse, error) {
	if req.Name == callerFrom(ctx) {
		return nil, sched.Errorf(sched.EFAILEDPRECONDITION, "you cannot revoke yourself")
	}
	if err := h.s.db.RevokeUser(ctx, req.Name); err != nil {
		return nil, err
	}
	h.s.log.InfoContext(ctx, "user revoked", "user", req.Name, "by", callerFrom(ctx))
	return &batchv1.RevokeUserResponse{}, nil
}

// NewToken mints another token for a live user.
func (h userHandler) NewToken(ctx context.Context, req *batchv1.NewTokenRequest) (*batchv1.NewTokenResponse, error) {
	token, err := h.s.db.NewUserToken(ctx, req.Name)
	if err != nil {
		return nil, err
	}
	return &batchv1.NewTokenResponse{Token: token}, nil
}

// WhoAmI names the caller.
func (h userHandler) WhoAmI(ctx context.Context, _ *batchv1.WhoAmIRequest) (*batchv1.WhoAmIResponse, error) {
	c := CallerFrom(ctx)
	return &batchv1.WhoAmIResponse{Name: c.Name, Role: c.Role}, nil
}
