// Package smtptest runs a real SMTP server on loopback, scripted to answer
// what a test needs: a given reply at MAIL FROM, at RCPT TO (per address) or
// at the end of DATA, AUTH required, STARTTLS offered or not, or no reply at
// all after the data (a hang or a dropped connection); a refusal in place of
// the greeting or of the reply to EHLO; SMTPUTF8 offered or not; implicit
// TLS; a limit on the recipients of a transaction and on the size.
//
// It is github.com/emersion/go-smtp's server with a scripted backend. The
// queue's end-to-end tests and the `mailq demo` command use it, so it is not
// internal; it is meant for tests and demos, never for production.
//
//	srv := smtptest.Start(t, smtptest.Script{
//		Rcpt: map[string]*gosmtp.SMTPError{"bob@example.com": smtptest.Reply(550, "5.1.1", "no such user")},
//	})
//	tr, _ := smtp.New(smtp.Config{Host: srv.Host(), Port: srv.Port(), TLS: smtp.TLSNone})
package smtptest

import (
	"bytes"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-sasl"
	gosmtp "github.com/emersion/go-smtp"
)

// AfterData is what the server does once it has read the whole message,
// instead of replying.
type AfterData int

const (
	// Answer answers the end of the data (with Script.Data). The default.
	Answer AfterData = iota
	// Hang answers nothing and keeps the connection open until the server
	// closes: the client's wait for the reply times out.
	Hang
	// Drop closes the connection without a reply.
	Drop
)

// Script tells the server how to answer. The zero Script accepts every
// message, without AUTH or STARTTLS.
type Script struct {
	// Mail is the reply to MAIL FROM; nil accepts.
	Mail *gosmtp.SMTPError
	// Rcpt maps an address (as given in RCPT TO, compared without regard to
	// case) to the reply to its RCPT TO; an address not in it is accepted.
	Rcpt map[string]*gosmtp.SMTPError
	// Data is the reply to the end of the data; nil accepts with
	// "250 2.0.0 OK: queued as <QueueID>".
	Data *gosmtp.SMTPError
	// QueueID is the id given in the 250 reply to the end of the data; empty
	// means "Q" and the number of the message, from 1.
	QueueID string
	// AfterData, when not Answer, makes the server read the whole message,
	// record it, then hang or drop the connection instead of replying.
	AfterData AfterData
	// Username and Password, when Username is set, make the server offer
	// AUTH PLAIN (over plain TCP too) and answer 530 to a MAIL FROM before a
	// successful AUTH; other credentials get 535.
	Username, Password string
	// Auth, when set, is the reply to every AUTH, whatever the credentials
	// (such as 534 or 454).
	Auth *gosmtp.SMTPError
	// TLS, when set, makes the server offer STARTTLS with this config.
	TLS *tls.Config
	// SMTPUTF8 makes the server offer SMTPUTF8.
	SMTPUTF8 bool
	// Greeting, when set, is the server's first reply instead of its 220
	// greeting (such as 421 or 554); the server closes the connection right
	// after it.
	Greeting *gosmtp.SMTPError
	// Hello, when set, is the reply to EHLO (and HELO) instead of 250; the
	// session stays open, as go-smtp keeps it.
	Hello *gosmtp.SMTPError
	// ImplicitTLS makes the server start TLS (with the TLS config) before
	// its greeting, as on port 465, instead of offering STARTTLS.
	ImplicitTLS bool
	// MaxRecipients is the most recipients of one transaction; past it the
	// server answers "452 4.5.3 Maximum limit of N recipients reached" to
	// RCPT TO. 0 means 100.
	MaxRecipients int
	// MaxSize is the SIZE the server announces (RFC 1870), and refuses
	// larger messages with 552; 0 means 32 MiB.
	MaxSize int64
}

// Reply returns an SMTP reply for a Script: code such as 550, enhanced such
// as "5.1.1" (empty for X.0.0) and the text.
func Reply(code int, enhanced, text string) *gosmtp.SMTPError {
	e := &gosmtp.SMTPError{Code: code, EnhancedCode: gosmtp.EnhancedCodeNotSet, Message: text}
	if enhanced != "" {
		parts := strings.Split(enhanced, ".")
		if len(parts) == 3 {
			for i, p := range parts {
				e.EnhancedCode[i], _ = strconv.Atoi(p)
			}
		}
	}
	return e
}

// Received is a message the server took (or read before hanging or
// dropping).
type Received struct {
	// From is the envelope sender (MAIL FROM).
	From string
	// To are the accepted envelope recipients (RCPT TO), in order.
	To []string
	// Data is the message as it arrived, dot-unstuffed, with CRLF line
	// endings.
	Data []byte
	// Replied tells whether the server answered the end of the data (false
	// after a hang or a drop).
	Replied bool
	// Accepted tells whether that answer was a 250.
	Accepted bool
	// UTF8 tells whether MAIL FROM carried the SMTPUTF8 parameter
	// (RFC 6531).
	UTF8 bool
	// Size is the SIZE= parameter of MAIL FROM (RFC 1870), 0 without one.
	Size int64
	// Body is the BODY= parameter of MAIL FROM ("8BITMIME"), empty without
	// one.
	Body string
}

// Server is a running scripted SMTP server on 127.0.0.1.
type Server struct {
	script Script
	srv    *gosmtp.Server
	ln     net.Listener
	done   chan struct{}
	served chan struct{} // closed when Serve has returned
	once   sync.Once

	mu       sync.Mutex
	received []Received
	sessions int
	conns    map[*gosmtp.Conn]struct{}
	// raw holds every connection accepted and not yet closed, from the
	// moment of Accept: Close closes them, go-smtp's own Close missing a
	// connection it accepted but had not yet registered (a client that
	// keeps it, as the SMTP transport's pool does, would hold its
	// goroutine for ever).
	raw     map[net.Conn]struct{}
	closing bool
}

// Start starts a server for script on 127.0.0.1 on a free port and closes it
// when the test ends. It fails the test if the server cannot listen.
func Start(t testing.TB, script Script) *Server {
	t.Helper()
	s, err := New(script)
	if err != nil {
		t.Fatalf("smtptest: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// New starts a server for script on 127.0.0.1 on a free port. The caller
// closes it with Close.
func New(script Script) (*Server, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("listen: %w", err)
	}
	s := &Server{script: script, ln: ln, done: make(chan struct{}), served: make(chan struct{}), conns: map[*gosmtp.Conn]struct{}{}, raw: map[net.Conn]struct{}{}}
	ln = &trackingListener{Listener: ln, s: s}
	srv := gosmtp.NewServer(s)
	srv.Domain = "smtptest.localhost"
	srv.AllowInsecureAuth = true
	srv.MaxMessageBytes = 32 << 20
	if script.MaxSize > 0 {
		srv.MaxMessageBytes = script.MaxSize
	}
	srv.MaxRecipients = 100
	if script.MaxRecipients > 0 {
		srv.MaxRecipients = script.MaxRecipients
	}
	srv.ReadTimeout = time.Minute
	srv.WriteTimeout = time.Minute
	srv.TLSConfig = script.TLS
	srv.EnableSMTPUTF8 = script.SMTPUTF8
	srv.ErrorLog = discardLogger{}
	s.srv = srv
	serve := net.Listener(ln)
	if script.ImplicitTLS && script.TLS != nil {
		srv.TLSConfig = nil
		serve = tls.NewListener(ln, script.TLS)
	}
	if script.Greeting != nil {
		serve = &refusingListener{Listener: ln, reply: script.Greeting}
	}
	go func() {
		defer close(s.served)
		_ = srv.Serve(serve)
	}()
	return s, nil
}

// refusingListener answers every connection with a reply in place of the
// greeting, then closes it: the server refuses to talk.
type refusingListener struct {
	net.Listener
	reply *gosmtp.SMTPError
}

func (l *refusingListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		r := l.reply
		line := strconv.Itoa(r.Code) + " "
		if r.EnhancedCode != gosmtp.EnhancedCodeNotSet && r.EnhancedCode != gosmtp.NoEnhancedCode {
			line += fmt.Sprintf("%d.%d.%d ", r.EnhancedCode[0], r.EnhancedCode[1], r.EnhancedCode[2])
		}
		_ = c.SetWriteDeadline(time.Now().Add(5 * time.Second))
		_, _ = io.WriteString(c, line+r.Message+"\r\n")
		_ = c.Close()
	}
}

type discardLogger struct{}

func (discardLogger) Printf(string, ...any) {}
func (discardLogger) Println(...any)        {}

// Addr returns the server's address, "127.0.0.1:port".
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Host returns the server's host, "127.0.0.1".
func (s *Server) Host() string { return "127.0.0.1" }

// Port returns the server's TCP port.
func (s *Server) Port() int { return s.ln.Addr().(*net.TCPAddr).Port }

// Messages returns copies of the messages the server read, in order.
func (s *Server) Messages() []Received {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Received, len(s.received))
	for i, r := range s.received {
		r.To = append([]string(nil), r.To...)
		r.Data = bytes.Clone(r.Data)
		out[i] = r
	}
	return out
}

// Sessions returns how many sessions (EHLO) the server opened.
func (s *Server) Sessions() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sessions
}

// Close releases any hanging session, stops the server and waits until it
// has stopped serving. It may be called more than once.
func (s *Server) Close() error {
	var err error
	s.once.Do(func() {
		close(s.done)
		err = s.srv.Close()
		// The server closes only the listeners Serve has registered: one
		// closed before its goroutine got that far would leave Serve
		// blocked in Accept for ever. Closing the listener here ends it.
		_ = s.ln.Close()
		<-s.served
		s.mu.Lock()
		s.closing = true
		raw := s.raw
		s.raw = map[net.Conn]struct{}{}
		s.mu.Unlock()
		for c := range raw {
			_ = c.Close()
		}
	})
	return err
}

// trackingListener records each connection it accepts in its server's raw
// set until the connection is closed, so that Close can close them all.
type trackingListener struct {
	net.Listener
	s *Server
}

// Accept implements net.Listener.
func (l *trackingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	l.s.mu.Lock()
	closing := l.s.closing
	if !closing {
		l.s.raw[c] = struct{}{}
	}
	l.s.mu.Unlock()
	if closing {
		_ = c.Close()
	}
	return &trackedConn{Conn: c, s: l.s}, nil
}

// trackedConn leaves its server's raw set when it is closed.
type trackedConn struct {
	net.Conn
	s *Server
}

// Close implements net.Conn.
func (c *trackedConn) Close() error {
	c.s.mu.Lock()
	delete(c.s.raw, c.Conn)
	c.s.mu.Unlock()
	return c.Conn.Close()
}

// NewSession implements gosmtp.Backend.
func (s *Server) NewSession(c *gosmtp.Conn) (gosmtp.Session, error) {
	if h := s.current().Hello; h != nil {
		return nil, h
	}
	s.mu.Lock()
	s.sessions++
	s.conns[c] = struct{}{}
	s.mu.Unlock()
	return &session{s: s, conn: c}, nil
}

// current returns the script in force.
func (s *Server) current() Script {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.script
}

// Update changes the script for the commands to come (the replies to MAIL
// FROM, RCPT TO, the data, AUTH and EHLO), such as a server that refused a
// recipient for now and takes it later. The listener's settings (TLS,
// Greeting, SMTPUTF8, MaxRecipients, MaxSize) stay as they started. Give
// f new maps rather than changing the old ones: a session may be reading
// them.
func (s *Server) Update(f func(*Script)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f(&s.script)
}

// DropConnections closes every open connection without a word, as a server
// does with a connection that stayed idle too long; the server goes on
// listening.
func (s *Server) DropConnections() {
	s.mu.Lock()
	conns := s.conns
	s.conns = map[*gosmtp.Conn]struct{}{}
	s.mu.Unlock()
	// Closed without the lock: a connection's Close takes it (trackedConn).
	for c := range conns {
		_ = c.Conn().Close()
	}
}

type session struct {
	s      *Server
	conn   *gosmtp.Conn
	authed bool
	from   string
	utf8   bool
	size   int64
	body   string
	to     []string
}

var _ gosmtp.AuthSession = (*session)(nil)

func (ss *session) AuthMechanisms() []string {
	if ss.s.current().Username == "" && ss.s.current().Auth == nil {
		return nil
	}
	return []string{sasl.Plain}
}

func (ss *session) Auth(mech string) (sasl.Server, error) {
	if mech != sasl.Plain {
		return nil, gosmtp.ErrAuthUnknownMechanism
	}
	return sasl.NewPlainServer(func(identity, username, password string) error {
		if r := ss.s.current().Auth; r != nil {
			return r
		}
		if username != ss.s.current().Username || password != ss.s.current().Password {
			return gosmtp.ErrAuthFailed
		}
		ss.authed = true
		return nil
	}), nil
}

func (ss *session) Mail(from string, opts *gosmtp.MailOptions) error {
	if ss.s.current().Username != "" && !ss.authed {
		return Reply(530, "5.7.0", "Authentication required")
	}
	if r := ss.s.current().Mail; r != nil {
		return r
	}
	ss.from = from
	ss.utf8 = opts != nil && opts.UTF8
	ss.size, ss.body = 0, ""
	if opts != nil {
		ss.size, ss.body = opts.Size, string(opts.Body)
	}
	return nil
}

func (ss *session) Rcpt(to string, _ *gosmtp.RcptOptions) error {
	for addr, r := range ss.s.current().Rcpt {
		if strings.EqualFold(addr, to) && r != nil {
			return r
		}
	}
	ss.to = append(ss.to, to)
	return nil
}

func (ss *session) Data(r io.Reader) error {
	data, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	rec := Received{From: ss.from, To: append([]string(nil), ss.to...), Data: data, UTF8: ss.utf8, Size: ss.size, Body: ss.body}
	sc := ss.s.current()
	reply := sc.Data
	if reply == nil && sc.AfterData == Answer {
		rec.Accepted = true
	}
	rec.Replied = sc.AfterData == Answer
	ss.s.mu.Lock()
	ss.s.received = append(ss.s.received, rec)
	n := len(ss.s.received)
	ss.s.mu.Unlock()

	switch sc.AfterData {
	case Hang:
		<-ss.s.done
		return errors.New("server closed")
	case Drop:
		_ = ss.conn.Conn().Close()
		return errors.New("dropped")
	}
	if reply != nil {
		return reply
	}
	id := sc.QueueID
	if id == "" {
		id = "Q" + strconv.Itoa(n)
	}
	return &gosmtp.SMTPError{Code: 250, EnhancedCode: gosmtp.EnhancedCode{2, 0, 0}, Message: "OK: queued as " + id}
}

func (ss *session) Reset() {
	ss.from, ss.utf8, ss.size, ss.body = "", false, 0, ""
	ss.to = nil
}

func (ss *session) Logout() error {
	ss.s.mu.Lock()
	delete(ss.s.conns, ss.conn)
	ss.s.mu.Unlock()
	return nil
}
