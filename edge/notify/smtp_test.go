package notify_test

import (
	"bufio"
	"encoding/base64"
	"net"
	"strings"
	"sync"
	"testing"

	cn "github.com/ql3/ql3/core/notify"
	"github.com/ql3/ql3/core/notify/channel"
	"github.com/ql3/ql3/core/run"
	"github.com/ql3/ql3/edge/notify"
)

// fakeSMTP speaks enough SMTP (RFC 5321) for one client: EHLO, AUTH PLAIN
// (RFC 4954), MAIL, RCPT, DATA, RSET, NOOP, QUIT. It records each mail.
type fakeSMTP struct {
	ln    net.Listener
	mu    sync.Mutex
	mails []smtpMail
}

type smtpMail struct {
	auth, from string
	to         []string
	data       string
}

func newFakeSMTP(t *testing.T) *fakeSMTP {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &fakeSMTP{ln: ln}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go s.serve(c)
		}
	}()
	return s
}

func (s *fakeSMTP) port() int { return s.ln.Addr().(*net.TCPAddr).Port }

func (s *fakeSMTP) serve(c net.Conn) {
	defer c.Close()
	r := bufio.NewReader(c)
	say := func(line string) { c.Write([]byte(line + "\r\n")) }
	say("220 fake ESMTP")
	var m smtpMail
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return
		}
		line = strings.TrimRight(line, "\r\n")
		verb := strings.ToUpper(strings.SplitN(line, " ", 2)[0])
		switch verb {
		case "EHLO", "HELO":
			say("250-fake greets you")
			say("250-AUTH PLAIN")
			say("250 8BITMIME")
		case "AUTH":
			parts := strings.Fields(line)
			if len(parts) == 3 {
				b, _ := base64.StdEncoding.DecodeString(parts[2])
				m.auth = string(b)
			}
			say("235 2.7.0 Authentication successful")
		case "MAIL":
			m.from = line
			say("250 OK")
		case "RCPT":
			m.to = append(m.to, line)
			say("250 OK")
		case "DATA":
			say("354 End data with <CR><LF>.<CR><LF>")
			var b strings.Builder
			for {
				l, err := r.ReadString('\n')
				if err != nil {
					return
				}
				if l == ".\r\n" {
					break
				}
				b.WriteString(l)
			}
			m.data = strings.ReplaceAll(b.String(), "\r\n ", " ") // unfold headers (RFC 5322 2.2.3)
			s.mu.Lock()
			s.mails = append(s.mails, m)
			s.mu.Unlock()
			m = smtpMail{auth: m.auth}
			say("250 OK queued")
		case "RSET", "NOOP":
			say("250 OK")
		case "QUIT":
			say("221 bye")
			return
		default:
			say("502 not implemented")
		}
	}
}

func (s *fakeSMTP) all() []smtpMail {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]smtpMail(nil), s.mails...)
}

func TestEmailThroughAFakeSMTPServer(t *testing.T) {
	e := newEnv(t)
	srv := newFakeSMTP(t)
	ch := e.channel("mail", channel.Settings{Kind: channel.Email, SMTPHost: "localhost", SMTPPort: srv.port(),
		From: "ql3@example.com", To: []string{"ops@example.com"}, Username: "ql3user", Password: "smtp-pass"})
	e.rule("r", notify.RuleInput{Rule: cn.Rule{Channels: []string{ch.ID}}})
	r := e.finish(run.AttemptFailed)
	e.step()
	ds := e.deliveries(notify.DeliveryFilter{})
	if len(ds) != 1 || ds[0].Status != notify.StatusDelivered {
		t.Fatalf("%+v", ds)
	}
	if _, err := e.d.SendTest(e.ctx, ch.ID, "test"); err != nil {
		t.Fatal(err)
	}
	mails := srv.all()
	if len(mails) != 2 {
		t.Fatalf("%d mails, want 2", len(mails))
	}
	for i, want := range []struct{ subject, body string }{
		{"ql3: checkin failed", "run: " + r.ID},
		{"ql3: test notification", "This is a test of the channel"},
	} {
		m := mails[i]
		if m.auth != "\x00ql3user\x00smtp-pass" {
			t.Errorf("AUTH PLAIN %q", m.auth)
		}
		if !strings.HasPrefix(m.from, "MAIL FROM:<ql3@example.com>") {
			t.Errorf("envelope %q", m.from)
		}
		if len(m.to) != 1 || !strings.HasPrefix(m.to[0], "RCPT TO:<ops@example.com>") {
			t.Errorf("recipients %q", m.to)
		}
		for _, h := range []string{"Subject: " + want.subject, "From: <ql3@example.com>", "To: <ops@example.com>", "X-Ql3-Idempotency-Key: ql3:notify:v1:"} {
			if !strings.Contains(m.data, h) {
				t.Errorf("mail %d lacks %q:\n%s", i, h, m.data)
			}
		}
		if !strings.Contains(m.data, want.body) {
			t.Errorf("mail %d body lacks %q", i, want.body)
		}
	}
	if !strings.Contains(mails[0].data, "Message-ID: <ql3.notify.v1.") {
		t.Errorf("Message-ID not derived from the idempotency key:\n%s", mails[0].data)
	}
}
