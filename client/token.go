package client

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"connectrpc.com/connect"
)

// Environment variables and files a token is found in (see ResolveToken).
const (
	// TokenEnv holds a user's token.
	TokenEnv = "BATCH_TOKEN"
	// WorkerTokenEnv holds a worker's token (batchd worker).
	WorkerTokenEnv = "BATCH_WORKER_TOKEN"
	// DataEnv names the server's data directory (as batchd serve --data).
	DataEnv = "BATCHD_DATA"
	// DefaultDataDir is batchd serve's default data directory.
	DefaultDataDir = "./batchd-data"
	// AdminTokenFile is the first admin's token file in the data directory,
	// written by batchd serve on first start (mode 0600).
	AdminTokenFile = "admin.token"
)

// TokenSource says where ResolveToken looks.
type TokenSource struct {
	// Flag is the --token flag's value (first choice).
	Flag string
	// Env is the environment lookup; nil means os.LookupEnv.
	Env func(string) (string, bool)
	// ConfigFile is a file holding the token alone, or a "token = VALUE"
	// (or "token: VALUE") line; "" means UserConfigDir/batchd/token.
	ConfigFile string
	// DataDir is the server's data directory; "" means $BATCHD_DATA, else
	// DefaultDataDir.
	DataDir string
}

// ResolveToken finds the token to send, in this order: the flag,
// $BATCH_TOKEN, the config file, then the local admin token file
// DATA/admin.token (so that batchctl on the server's machine works with no
// flags). It returns the token and where it came from, or "" and no error
// when there is none (the server then answers Unauthenticated).
func ResolveToken(src TokenSource) (token, from string, err error) {
	if t := strings.TrimSpace(src.Flag); t != "" {
		return t, "--token", nil
	}
	env := src.Env
	if env == nil {
		env = os.LookupEnv
	}
	if t, ok := env(TokenEnv); ok && strings.TrimSpace(t) != "" {
		return strings.TrimSpace(t), "$" + TokenEnv, nil
	}
	cfg := src.ConfigFile
	if cfg == "" {
		if d, err := os.UserConfigDir(); err == nil {
			cfg = filepath.Join(d, "batchd", "token")
		}
	}
	if cfg != "" {
		t, err := readTokenFile(cfg)
		if err != nil {
			return "", "", err
		}
		if t != "" {
			return t, cfg, nil
		}
	}
	data := src.DataDir
	if data == "" {
		if d, ok := env(DataEnv); ok && d != "" {
			data = d
		} else {
			data = DefaultDataDir
		}
	}
	p := filepath.Join(data, AdminTokenFile)
	t, err := readTokenFile(p)
	if err != nil || t == "" {
		return "", "", err
	}
	return t, p, nil
}

// readTokenFile reads a token from a file ("" when the file does not
// exist). The file holds the token alone, or a "token = VALUE" line.
func readTokenFile(path string) (string, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read token: %w", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if k, v, ok := strings.Cut(line, "="); ok && strings.TrimSpace(k) == "token" {
			return strings.Trim(strings.TrimSpace(v), `"'`), nil
		}
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "token" {
			return strings.Trim(strings.TrimSpace(v), `"'`), nil
		}
		if !strings.ContainsAny(line, " =:") {
			return line, nil
		}
	}
	return "", nil
}

// BearerInterceptor is a Connect client interceptor that sends
// "Authorization: Bearer TOKEN" on every call and stream (nothing when
// token is empty).
func BearerInterceptor(token string) connect.Interceptor { return bearer(token) }

type bearer string

func (b bearer) set(h http.Header) {
	if b != "" {
		h.Set("Authorization", "Bearer "+string(b))
	}
}

// WrapUnary adds the header to unary calls.
func (b bearer) WrapUnary(next connect.UnaryFunc) connect.UnaryFunc {
	return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
		b.set(req.Header())
		return next(ctx, req)
	}
}

// WrapStreamingClient adds the header to streams.
func (b bearer) WrapStreamingClient(next connect.StreamingClientFunc) connect.StreamingClientFunc {
	return func(ctx context.Context, spec connect.Spec) connect.StreamingClientConn {
		conn := next(ctx, spec)
		b.set(conn.RequestHeader())
		return conn
	}
}

// WrapStreamingHandler leaves handlers alone (client-side interceptor).
func (b bearer) WrapStreamingHandler(next connect.StreamingHandlerFunc) connect.StreamingHandlerFunc {
	return next
}

// WithToken returns an HTTP client that sends "Authorization: Bearer
// TOKEN" on every request through hc (nil: a default client), for
// Config.HTTPClient.
func WithToken(hc *http.Client, token string) *http.Client {
	if hc == nil {
		hc = &http.Client{}
	}
	out := *hc
	rt := hc.Transport
	if rt == nil {
		rt = http.DefaultTransport
	}
	out.Transport = bearerTransport{token: token, next: rt}
	return &out
}

type bearerTransport struct {
	token string
	next  http.RoundTripper
}

// RoundTrip adds the header to a copy of the request.
func (t bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if t.token == "" {
		return t.next.RoundTrip(r)
	}
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+t.token)
	return t.next.RoundTrip(r)
}
