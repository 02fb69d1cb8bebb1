package client

import (
	"context"
	"time"

	batchv1 "batchd/proto/batch/v1"
)

// FromConnect maps an error of a generated Connect client (for example the
// UserService's) to a *sched.Error with the matching code, as every Client
// method does; nil stays nil.
func FromConnect(err error) error { return fromConnect(err) }

// User is a batchd user as UserService shows it.
type User struct {
	Name string
	// Role is "user", "admin" or "worker".
	Role string
	// Tokens counts the user's live tokens.
	Tokens    int32
	CreatedAt time.Time
	// RevokedAt is zero while the user may call.
	RevokedAt time.Time
	// Weight is the user's fair-share weight.
	Weight float64
}

func userFromProto(u *batchv1.User) User {
	out := User{Name: u.GetName(), Role: u.GetRole(), Tokens: u.GetTokens(), Weight: u.GetWeight()}
	if u.GetCreatedAt() != nil {
		out.CreatedAt = u.GetCreatedAt().AsTime()
	}
	if u.GetRevokedAt() != nil {
		out.RevokedAt = u.GetRevokedAt().AsTime()
	}
	return out
}

// WhoAmI returns the name and role of the caller's token. Errors:
// EUNAUTHENTICATED, EUNAVAILABLE.
func (c *Client) WhoAmI(ctx context.Context) (name, role string, err error) {
	res, err := retry(ctx, c, func(ctx context.Context) (*batchv1.WhoAmIResponse, error) {
		return c.users().WhoAmI(ctx, &batchv1.WhoAmIRequest{})
	})
	if err != nil {
		return "", "", err
	}
	return res.GetName(), res.GetRole(), nil
}

// ListUsers returns every user (admin only). Errors: EPERMISSION,
// EUNAUTHENTICATED, EUNAVAILABLE.
func (c *Client) ListUsers(ctx context.Context) ([]User, error) {
	res, err := retry(ctx, c, func(ctx context.Context) (*batchv1.ListUsersResponse, error) {
		return c.users().ListUsers(ctx, &batchv1.ListUsersRequest{})
	})
	if err != nil {
		return nil, err
	}
	out := make([]User, 0, len(res.GetUsers()))
	for _, u := range res.GetUsers() {
		out = append(out, userFromProto(u))
	}
	return out, nil
}

// AddUser creates a user with role ("user", "admin" or "worker") and
// returns it with its first token, which is shown only now (admin only).
// It is tried once: a retry after a lost answer would find the user
// already there and its token gone. Errors: EINVALID, ECONFLICT,
// EPERMISSION, EUNAUTHENTICATED, EUNAVAILABLE.
func (c *Client) AddUser(ctx context.Context, name, role string) (User, string, error) {
	return c.AddUserWeight(ctx, name, role, 0)
}

// AddUserWeight is AddUser with a fair-share weight (0: 1).
func (c *Client) AddUserWeight(ctx context.Context, name, role string, weight float64) (User, string, error) {
	res, err := c.users().AddUser(ctx, &batchv1.AddUserRequest{Name: name, Role: role, Weight: weight})
	if err != nil {
		return User{}, "", fromConnect(err)
	}
	return userFromProto(res.GetUser()), res.GetToken(), nil
}

// NewToken mints another token for the user (admin only), shown only now.
// It is tried once, like AddUser. Errors: ENOTFOUND, EFAILEDPRECONDITION
// (revoked), EPERMISSION, EUNAUTHENTICATED, EUNAVAILABLE.
func (c *Client) NewToken(ctx context.Context, name string) (string, error) {
	res, err := c.users().NewToken(ctx, &batchv1.NewTokenRequest{Name: name})
	if err != nil {
		return "", fromConnect(err)
	}
	return res.GetToken(), nil
}

// RevokeUser revokes the user and all its tokens (admin only); their next
// call fails. Errors: ENOTFOUND, EPERMISSION, EUNAUTHENTICATED,
// EUNAVAILABLE.
func (c *Client) RevokeUser(ctx context.Context, name string) error {
	_, err := retry(ctx, c, func(ctx context.Context) (*batchv1.RevokeUserResponse, error) {
		return c.users().RevokeUser(ctx, &batchv1.RevokeUserRequest{Name: name})
	})
	return err
}

// SetUserWeight sets a user's fair-share weight (admin only): while
// several users have requested work queued, slots go to them in proportion
// to their weights. Errors: EINVALID, ENOTFOUND, EPERMISSION,
// EUNAUTHENTICATED, EUNAVAILABLE.
func (c *Client) SetUserWeight(ctx context.Context, name string, weight float64) (User, error) {
	res, err := retry(ctx, c, func(ctx context.Context) (*batchv1.SetUserWeightResponse, error) {
		return c.users().SetUserWeight(ctx, &batchv1.SetUserWeightRequest{Name: name, Weight: weight})
	})
	if err != nil {
		return User{}, err
	}
	return userFromProto(res.GetUser()), nil
}
