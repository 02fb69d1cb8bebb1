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
	// ConfigFile is the config file (see LoadConfig); "" means
	// DefaultConfigFile.
	ConfigFile string
	// ConfigRequired says the file was named (--config, $BATCH_CONFIG), so
	// that a missing one is an error rather than no config.
	ConfigRequired bool
	// DataDir is the server's data directory; "" means $BATCHD_DATA, else
	// where batchd serve started from this directory keeps it
	// (DefaultDataDir).
	DataDir string
}

// TokenSearch is what FindToken found, and where it looked.
type TokenSearch struct {
	Token string
	// From says where Token came from ("--token", "$BATCH_TOKEN" or a
	// file's path); "" when there is none.
	From string
	// Tried lists, in order, each place looked at and what was there, for
	// an error that says where a token could have been.
	Tried []string
	// Config is the config file's content (zero when there is none).
	Config FileConfig
}

// ResolveToken finds the token to send, in this order: the flag,
// $BATCH_TOKEN, the config file, then the local admin token file
// admin.token in the data directory (so that batchctl on the server's
// machine works with no flags). It returns the token and where it came
// from, or "" and no error when there is none (the server then answers
// Unauthenticated). Errors: a config file that was named and is missing,
// or that has a key other than token and server.
func ResolveToken(src TokenSource) (token, from string, err error) {
	r, err := FindToken(src)
	return r.Token, r.From, err
}

// FindToken is ResolveToken that also says where it looked.
func FindToken(src TokenSource) (TokenSearch, error) {
	var r TokenSearch
	if t := strings.TrimSpace(src.Flag); t != "" {
		r.Token, r.From = t, "--token"
	}
	env := src.Env
	if env == nil {
		env = os.LookupEnv
	}
	if t, ok := env(TokenEnv); r.Token == "" && ok && strings.TrimSpace(t) != "" {
		r.Token, r.From = strings.TrimSpace(t), "$"+TokenEnv
	} else if r.Token == "" {
		r.Tried = append(r.Tried, "$"+TokenEnv+": not set")
	}
	// The config file is read even when a token is at hand: its server
	// line counts, and a broken file is an error either way.
	cfg := src.ConfigFile
	if cfg == "" {
		cfg = DefaultConfigFile()
	}
	if cfg != "" {
		c, err := LoadConfig(cfg, src.ConfigRequired)
		if err != nil {
			return r, err
		}
		r.Config = c
		switch {
		case r.Token != "":
		case c.Token != "":
			r.Token, r.From = c.Token, cfg
		case c.Path == "":
			r.Tried = append(r.Tried, cfg+" (config file): no such file")
		default:
			r.Tried = append(r.Tried, cfg+" (config file): no token line")
		}
	}
	if r.Token != "" {
		return r, nil
	}
	// An explicit directory (--data, then $BATCHD_DATA) wins over the
	// ./batchd-data of wherever batchctl runs, which may be stale.
	var dirs []string
	switch d, ok := env(DataEnv); {
	case src.DataDir != "":
		dirs = []string{src.DataDir}
	case ok && d != "":
		dirs = []string{d}
	default:
		r.Tried = append(r.Tried, "$"+DataEnv+": not set")
		dirs = []string{DefaultDataDir}
	}
	for _, d := range dirs {
		p := filepath.Join(d, AdminTokenFile)
		t, err := readTokenFile(p)
		if err != nil {
			return r, err
		}
		if t != "" {
			r.Token, r.From = t, p
			return r, nil
		}
		r.Tried = append(r.Tried, p+": no such file")
	}
	return r, nil
}

// DefaultConfigFile is the config file read when none is named:
// UserConfigDir/batchd/token ("" when there is no such directory).
func DefaultConfigFile() string {
	d, err := os.UserConfigDir()
	if err != nil {
		return ""
	}
	return filepath.Join(d, "batchd", "token")
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
		if k, v, ok := cutKey(line); ok && k == "token" {
			return v, nil
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
