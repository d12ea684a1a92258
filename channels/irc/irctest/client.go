package irctest

import (
	"bufio"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ergochat/irc-go/ircmsg"
)

// Line is one line a Client received.
type Line struct {
	// Raw is the line as it came over the wire, without CR LF.
	Raw string
	Msg ircmsg.Message
	At  time.Time
}

// Client is a plain IRC client (a user talking to the bot). It records
// every line it receives and answers PINGs.
type Client struct {
	Nick string

	t    testing.TB
	nc   net.Conn
	wmu  sync.Mutex
	done chan struct{}

	mu    sync.Mutex
	lines []Line
}

// Dial connects nick to the server at addr, waits for the welcome, and
// disconnects when the test ends.
func Dial(t testing.TB, addr, nick string) *Client {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatalf("irctest: dial %s: %v", addr, err)
	}
	c := &Client{Nick: nick, t: t, nc: nc, done: make(chan struct{})}
	go c.read()
	t.Cleanup(c.Close)
	c.Send("NICK " + nick)
	c.Send("USER " + nick + " 0 * :test user " + nick)
	c.Wait("welcome of "+nick, func(l Line) bool { return l.Msg.Command == "001" })
	return c
}

func (c *Client) read() {
	defer close(c.done)
	r := bufio.NewReaderSize(c.nc, 16<<10)
	for {
		raw, err := r.ReadString('\n')
		if err != nil {
			return
		}
		raw = strings.TrimRight(raw, "\r\n")
		m, err := ircmsg.ParseLine(raw)
		if err != nil {
			continue
		}
		if m.Command == "PING" {
			c.Send("PONG :" + strings.Join(m.Params, " "))
		}
		c.mu.Lock()
		c.lines = append(c.lines, Line{Raw: raw, Msg: m, At: time.Now()})
		c.mu.Unlock()
	}
}

// Send writes one raw line (CR LF is added).
func (c *Client) Send(line string) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_ = c.nc.SetWriteDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.nc.Write([]byte(line + "\r\n")); err != nil {
		c.t.Logf("irctest: %s: write %q: %v", c.Nick, line, err)
	}
}

// Privmsg sends text to target (a nick or channel).
func (c *Client) Privmsg(target, text string) {
	c.Send("PRIVMSG " + target + " :" + text)
}

// Join joins channel and waits until the server confirmed it.
func (c *Client) Join(channel string) {
	c.Send("JOIN " + channel)
	c.Wait(c.Nick+" joined "+channel, func(l Line) bool {
		return l.Msg.Command == "JOIN" && strings.EqualFold(l.Msg.Nick(), c.Nick) && len(l.Msg.Params) > 0 && strings.EqualFold(l.Msg.Params[0], channel)
	})
}

// Oper makes the client an IRC operator (for KILL).
func (c *Client) Oper() {
	c.Send("OPER " + OperName + " " + OperPassword)
	c.Wait(c.Nick+" to become an operator", func(l Line) bool { return l.Msg.Command == "381" })
}

// Lines returns every line received so far.
func (c *Client) Lines() []Line {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Line(nil), c.lines...)
}

// Len is how many lines were received so far (a mark for WaitFrom).
func (c *Client) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.lines)
}

// Wait waits up to 15 s for a received line matching ok, from the first
// line on.
func (c *Client) Wait(what string, ok func(Line) bool) Line {
	c.t.Helper()
	return c.WaitFrom(0, 15*time.Second, what, ok)
}

// WaitFrom waits up to timeout for a line matching ok among the lines
// received from index from on.
func (c *Client) WaitFrom(from int, timeout time.Duration, what string, ok func(Line) bool) Line {
	c.t.Helper()
	l, found := c.Poll(from, timeout, ok)
	if !found {
		c.t.Fatalf("irctest: %s: timed out after %s waiting for %s; got:\n%s", c.Nick, timeout, what, c.dump())
	}
	return l
}

// Poll is WaitFrom that reports a timeout instead of failing the test.
func (c *Client) Poll(from int, timeout time.Duration, ok func(Line) bool) (Line, bool) {
	deadline := time.Now().Add(timeout)
	for {
		c.mu.Lock()
		for _, l := range c.lines[min(from, len(c.lines)):] {
			if ok(l) {
				c.mu.Unlock()
				return l, true
			}
		}
		c.mu.Unlock()
		if time.Now().After(deadline) {
			return Line{}, false
		}
		select {
		case <-c.done: // connection gone: no more lines will come
			return Line{}, false
		default:
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (c *Client) dump() string {
	var b strings.Builder
	for _, l := range c.Lines() {
		fmt.Fprintln(&b, l.Raw)
	}
	return b.String()
}

// Close quits and waits for the reader to end.
func (c *Client) Close() {
	c.Send("QUIT :bye")
	c.nc.Close()
	<-c.done
}

// PrivmsgsFrom returns the texts of the PRIVMSGs nick sent to target
// (a channel, or this client's nick), in order, from index from on.
func (c *Client) PrivmsgsFrom(from int, nick, target string) []Line {
	var out []Line
	all := c.Lines()
	for _, l := range all[min(from, len(all)):] {
		if l.Msg.Command == "PRIVMSG" && strings.EqualFold(l.Msg.Nick(), nick) && len(l.Msg.Params) == 2 && strings.EqualFold(l.Msg.Params[0], target) {
			out = append(out, l)
		}
	}
	return out
}
