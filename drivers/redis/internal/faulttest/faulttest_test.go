package faulttest

import (
	"bufio"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/alexify/mailer/mail/smtptest"
)

func TestSends(t *testing.T) {
	msg := func(id string) smtptest.Received {
		return smtptest.Received{Data: []byte("Message-ID: " + id + "\r\nSubject: x\r\n\r\nbody\r\n")}
	}
	for _, tc := range []struct {
		name string
		in   []smtptest.Received
		want map[string]int
	}{
		{"none", nil, map[string]int{}},
		{"once each", []smtptest.Received{msg("<a@t>"), msg("<b@t>")}, map[string]int{"<a@t>": 1, "<b@t>": 1}},
		{"twice", []smtptest.Received{msg("<a@t>"), msg("<a@t>")}, map[string]int{"<a@t>": 2}},
		{"unreadable", []smtptest.Received{{Data: []byte("no header at all")}}, map[string]int{"(unreadable)": 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, Sends(tc.in)); diff != "" {
				t.Errorf("Sends (-want +got):\n%s", diff)
			}
		})
	}
}

func TestMeasureString(t *testing.T) {
	for _, tc := range []struct {
		name string
		m    Measure
		want string
	}{
		{"clean", Measure{Fault: "f", Jobs: 3, SentOnce: 3, Accepted: 3, Recover: 120 * time.Millisecond, Drain: 1500 * time.Millisecond},
			"MEASURE f: jobs=3 sent_once=3 sent_twice=0 lost=0 unfinished=0 accepted=3 spent=0 failed={} delivery_unknown={} redelivered=0 recover=120ms drain=1.5s"},
		{"codes sorted, never", Measure{Fault: "g", Jobs: 2, Failed: map[string]int{"queue.z": 1, "queue.a": 2}, DeliveryUnknown: map[string]int{"delivery_unknown": 1}, Recover: -1, Drain: -1},
			"MEASURE g: jobs=2 sent_once=0 sent_twice=0 lost=0 unfinished=0 accepted=0 spent=0 failed={queue.a:2,queue.z:1} delivery_unknown={delivery_unknown:1} redelivered=0 recover=never drain=never"},
		{"none pending", Measure{Fault: "h", Recover: NonePending},
			"MEASURE h: jobs=0 sent_once=0 sent_twice=0 lost=0 unfinished=0 accepted=0 spent=0 failed={} delivery_unknown={} redelivered=0 recover=none_pending drain=0s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, tc.m.String()); diff != "" {
				t.Errorf("String (-want +got):\n%s", diff)
			}
		})
	}
}

// TestGate relays to a server, refuses a dial once stopped, and relays on
// the same port again once open; a session in flight outlives a Stop.
func TestGate(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer func() { _ = c.Close() }()
				s := bufio.NewScanner(c)
				for s.Scan() {
					_, _ = c.Write([]byte("echo " + s.Text() + "\n"))
				}
			}()
		}
	}()
	g := NewGate(t, ln.Addr().String())
	addr := "127.0.0.1:" + strconv.Itoa(g.Port())
	echo := func(c net.Conn, s string) string {
		t.Helper()
		if _, err := c.Write([]byte(s + "\n")); err != nil {
			t.Fatal(err)
		}
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		line, err := bufio.NewReader(c).ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		return line
	}
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Close() }()
	if got := echo(c, "a"); got != "echo a\n" {
		t.Fatalf("through the gate: %q", got)
	}
	g.Stop()
	if d, err := net.Dial("tcp", addr); err == nil {
		_ = d.Close()
		t.Fatal("a dial to a stopped gate succeeded")
	}
	if got := echo(c, "b"); got != "echo b\n" {
		t.Fatalf("the session in flight after Stop: %q", got)
	}
	if err := g.Open(); err != nil {
		t.Fatal(err)
	}
	d, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatalf("a dial to the gate open again: %v", err)
	}
	defer func() { _ = d.Close() }()
	if got := echo(d, "c"); got != "echo c\n" {
		t.Fatalf("through the gate open again: %q", got)
	}
}
