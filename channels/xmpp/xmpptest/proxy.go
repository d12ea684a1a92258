package xmpptest

import (
	"io"
	"net"
	"sync"
	"testing"
)

// Proxy forwards loopback TCP connections to a server; Drop cuts the ones
// open, as a network failure would.
type Proxy struct {
	// Addr is where to connect instead of the server.
	Addr string
	ln   net.Listener
	to   string

	mu    sync.Mutex
	conns []net.Conn
	wg    sync.WaitGroup
}

// NewProxy forwards to addr until t ends.
func NewProxy(t testing.TB, addr string) *Proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &Proxy{Addr: ln.Addr().String(), ln: ln, to: addr}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(func() {
		_ = ln.Close()
		p.Drop()
		p.wg.Wait()
	})
	return p
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		s, err := net.Dial("tcp", p.to)
		if err != nil {
			_ = c.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, c, s)
		p.mu.Unlock()
		p.wg.Add(2)
		go p.pipe(c, s)
		go p.pipe(s, c)
	}
}

func (p *Proxy) pipe(dst, src net.Conn) {
	defer p.wg.Done()
	_, _ = io.Copy(dst, src)
	_ = dst.Close()
	_ = src.Close()
}

// Drop closes every open connection.
func (p *Proxy) Drop() {
	p.mu.Lock()
	conns := p.conns
	p.conns = nil
	p.mu.Unlock()
	for _, c := range conns {
		_ = c.Close()
	}
}
