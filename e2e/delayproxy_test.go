package e2e

import (
	"io"
	"net"
	"sync"
	"testing"
	"time"
)

// delayProxy is a TCP proxy on loopback that holds every byte it forwards,
// in either direction, for delay: a worker behind it sees the server as
// over a network with delay each way (a remote worker), in order and without
// a limit on throughput. It stops at the end of the test.
type delayProxy struct {
	ln    net.Listener
	delay time.Duration
	wg    sync.WaitGroup
	mu    sync.Mutex
	conns []net.Conn
}

func startDelayProxy(t *testing.T, target string, delay time.Duration) *delayProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &delayProxy{ln: ln, delay: delay}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			in, err := ln.Accept()
			if err != nil {
				return
			}
			out, err := net.Dial("tcp", target)
			if err != nil {
				in.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, in, out)
			p.mu.Unlock()
			p.wg.Add(2)
			go func() { defer p.wg.Done(); p.pipe(out, in) }()
			go func() { defer p.wg.Done(); p.pipe(in, out) }()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		p.mu.Lock()
		for _, c := range p.conns {
			c.Close()
		}
		p.mu.Unlock()
		p.wg.Wait()
	})
	return p
}

func (p *delayProxy) url() string { return "http://" + p.ln.Addr().String() }

type chunk struct {
	b  []byte
	at time.Time
}

// pipe copies src to dst, each chunk delay after it was read.
func (p *delayProxy) pipe(dst, src net.Conn) {
	ch := make(chan chunk, 1024)
	go func() {
		defer close(ch)
		for {
			buf := make([]byte, 32<<10)
			n, err := src.Read(buf)
			if n > 0 {
				ch <- chunk{buf[:n], time.Now().Add(p.delay)}
			}
			if err != nil {
				return
			}
		}
	}()
	for c := range ch {
		time.Sleep(time.Until(c.at))
		if _, err := dst.Write(c.b); err != nil {
			break
		}
	}
	for range ch { // let the reader end
	}
	if tc, ok := dst.(*net.TCPConn); ok {
		_ = tc.CloseWrite()
	} else {
		dst.Close()
	}
	_, _ = io.Copy(io.Discard, src)
}
