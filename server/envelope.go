package server

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
)

// This file checks the framing of enveloped requests (gRPC, gRPC-Web and
// the Connect protocol's streaming calls: each message is a flags byte, a
// 4-byte big-endian length and the message) before connect-go reads them.
// connect-go answers a truncated envelope, a request with the end-stream
// or an unknown flag, or a compressed message without an encoding, with
// Internal, Unknown or Unimplemented, and our interceptor logged each one at
// ERROR; a malformed request is the caller's fault. connect-go hands a
// *connect.Error returned by the request body's Read back to the client
// as it is, so the body below returns InvalidArgument at the first byte
// that breaks the framing, and the server logs it at WARN once per peer.

// errMalformed marks the errors of malformed envelopes (logCall logs them
// at DEBUG: the WARN once per peer says it).
var errMalformed = errors.New("malformed request envelope")

// maxWarnedPeers bounds the peers remembered as already warned about; when
// full it starts over (a peer may then be warned about again).
const maxWarnedPeers = 4096

// guardEnvelopes wraps next so that enveloped request bodies are checked
// (see envelopeBody).
func (s *Server) guardEnvelopes(next http.Handler) http.Handler {
	single := singleRequestProcedures()
	var (
		mu     sync.Mutex
		warned = map[string]bool{}
	)
	warn := func(r *http.Request, err error) {
		peer, _, splitErr := net.SplitHostPort(r.RemoteAddr)
		if splitErr != nil {
			peer = r.RemoteAddr
		}
		mu.Lock()
		first := !warned[peer]
		if first {
			if len(warned) >= maxWarnedPeers {
				clear(warned)
			}
			warned[peer] = true
		}
		mu.Unlock()
		if first {
			s.log.Warn("malformed request envelopes from this peer, answered InvalidArgument (logged once per peer)",
				"peer", peer, "procedure", r.URL.Path, "err", err.Error())
		}
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ct := r.Header.Get("Content-Type")
		var encoding string
		switch {
		case strings.HasPrefix(ct, "application/grpc-web-text"):
			// base64 framing, which connect-go does not serve
		case strings.HasPrefix(ct, "application/grpc"): // gRPC and gRPC-Web
			encoding = r.Header.Get("Grpc-Encoding")
		case strings.HasPrefix(ct, "application/connect+"): // Connect streaming
			encoding = r.Header.Get("Connect-Content-Encoding")
		default:
			next.ServeHTTP(w, r)
			return
		}
		if r.Body != nil && r.Body != http.NoBody || single[r.URL.Path] {
			body := r.Body
			if body == nil {
				body = http.NoBody
			}
			r.Body = &envelopeBody{r: body, single: single[r.URL.Path],
				compressed: encoding != "" && encoding != "identity",
				onError:    func(err error) { warn(r, err) }}
		}
		next.ServeHTTP(w, r)
	})
}

// singleRequestProcedures returns the paths of the procedures of package
// batch.v1 whose request is one message (unary and server streaming).
func singleRequestProcedures() map[string]bool {
	out := map[string]bool{}
	protoregistry.GlobalFiles.RangeFilesByPackage("batch.v1", func(f protoreflect.FileDescriptor) bool {
		for i := 0; i < f.Services().Len(); i++ {
			sv := f.Services().Get(i)
			for j := 0; j < sv.Methods().Len(); j++ {
				if m := sv.Methods().Get(j); !m.IsStreamingClient() {
					out["/"+string(sv.FullName())+"/"+string(m.Name())] = true
				}
			}
		}
		return true
	})
	return out
}

// envelopeBody is a request body that checks the envelope framing as
// connect-go reads it: each prefix whole, flags only 0 or (with a request
// encoding) 1, every promised byte present, and for a single-request
// procedure exactly one message. At the first violation it returns (after
// the bytes before it) an InvalidArgument *connect.Error, on this and every
// later Read.
type envelopeBody struct {
	r          io.ReadCloser
	single     bool // exactly one message
	compressed bool // the request names an encoding: flag 1 is allowed
	onError    func(error)

	prefix  [5]byte
	nprefix int   // bytes of the current prefix seen
	left    int64 // bytes of the current message still to come
	size    int64 // the current message's promised size
	msgs    int   // messages begun
	err     error // sticky
}

// Read implements io.Reader.
func (b *envelopeBody) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	n, err := b.r.Read(p)
	for i := 0; i < n; {
		if b.left > 0 {
			k := min(int64(n-i), b.left)
			b.left -= k
			i += int(k)
			continue
		}
		if b.nprefix == 0 {
			if e := b.check(p[i]); e != nil {
				return b.fail(i, e)
			}
		}
		b.prefix[b.nprefix] = p[i]
		b.nprefix++
		i++
		if b.nprefix == len(b.prefix) {
			b.size = int64(binary.BigEndian.Uint32(b.prefix[1:]))
			b.left, b.nprefix = b.size, 0
		}
	}
	if errors.Is(err, io.EOF) {
		var e error
		switch {
		case b.nprefix > 0:
			e = fmt.Errorf("%w: the body ends inside a message's 5-byte prefix (%d bytes of it)", errMalformed, b.nprefix)
		case b.left > 0:
			e = fmt.Errorf("%w: a message promised %d bytes and the body ends after %d", errMalformed, b.size, b.size-b.left)
		case b.single && b.msgs == 0:
			e = fmt.Errorf("%w: the request has no message", errMalformed)
		}
		if e != nil {
			return b.fail(n, e)
		}
	}
	return n, err
}

// check checks the flags byte that begins a message.
func (b *envelopeBody) check(flags byte) error {
	b.msgs++
	switch {
	case b.single && b.msgs > 1:
		return fmt.Errorf("%w: this procedure takes one request message, the body holds more", errMalformed)
	case flags&^1 != 0:
		return fmt.Errorf("%w: message flags 0x%02x (a request message may set only the compression flag 0x01)", errMalformed, flags)
	case flags&1 != 0 && !b.compressed:
		return fmt.Errorf("%w: a compressed message, but the request names no encoding", errMalformed)
	}
	return nil
}

// fail records err, reports it once and returns the n good bytes before it
// (then err on the next Read), or err at once.
func (b *envelopeBody) fail(n int, err error) (int, error) {
	b.err = connect.NewError(connect.CodeInvalidArgument, err)
	b.onError(err)
	if n > 0 {
		return n, nil
	}
	return 0, b.err
}

// Close implements io.Closer.
func (b *envelopeBody) Close() error { return b.r.Close() }
