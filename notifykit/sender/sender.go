// Package sender makes one delivery attempt through one channel: the
// providers' HTTP requests (core/notify/channel) and SMTP mail (go-mail).
// Errors never contain a request URL, header or credential.
package sender

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/wneessen/go-mail"

	"github.com/ql3/ql3/core/notify/channel"
	"github.com/ql3/ql3/notifykit"
)

// DefaultRequestTimeout bounds one delivery attempt.
const DefaultRequestTimeout = 15 * time.Second

// maxResponseBytes bounds what is read of a provider's answer.
const maxResponseBytes = 64 << 10

// Sender sends one message through one channel. Errors never contain a
// request URL or header (a token may be part of either).
type Sender struct {
	// Timeout bounds each attempt (connect, request, answer).
	Timeout time.Duration
	// Transport is the base for channels without a proxy (tests and the
	// benchmark share one); nil → a fresh http.Transport.
	Transport *http.Transport

	mu      sync.Mutex
	proxied map[string]*http.Transport // by proxy URL
}

// CloseIdle closes the idle connections of every transport (at stop, so
// no keep-alive goroutine outlives the deliverer).
func (s *Sender) CloseIdle() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.Transport != nil {
		s.Transport.CloseIdleConnections()
	}
	for _, t := range s.proxied {
		t.CloseIdleConnections()
	}
}

// SendError is a failed attempt: the HTTP status (0 when there was no
// answer) and a short reason free of credentials.
type SendError struct {
	Status int
	Reason string
}

func (e *SendError) Error() string { return e.Reason }

func (s *Sender) timeout() time.Duration {
	if s.Timeout <= 0 {
		return DefaultRequestTimeout
	}
	return s.Timeout
}

func (s *Sender) transport(proxy string) (*http.Transport, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.Transport == nil {
		s.Transport = &http.Transport{MaxIdleConnsPerHost: 4, IdleConnTimeout: 90 * time.Second}
	}
	if proxy == "" {
		return s.Transport, nil
	}
	if t, ok := s.proxied[proxy]; ok {
		return t, nil
	}
	u, err := url.Parse(proxy)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return nil, &SendError{Reason: "proxy: only http:// and https:// proxies are supported"}
	}
	t := s.Transport.Clone()
	t.Proxy = http.ProxyURL(u)
	if s.proxied == nil {
		s.proxied = map[string]*http.Transport{}
	}
	s.proxied[proxy] = t
	return t, nil
}

// Send delivers m through st at nowMs; it returns the HTTP status of a
// successful answer (0 for email).
func (s *Sender) Send(ctx context.Context, st channel.Settings, m channel.Message, nowMs int64) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout())
	defer cancel()
	if st.Kind == channel.Email {
		return 0, s.sendMail(ctx, st, m)
	}
	req, err := channel.Build(st, m, nowMs)
	if err != nil {
		return 0, &SendError{Reason: "building the request: " + err.Error()}
	}
	hr, err := http.NewRequestWithContext(ctx, req.Method, req.URL, bytes.NewReader(req.Body))
	if err != nil {
		return 0, &SendError{Reason: "the channel's URL does not form a request"}
	}
	for _, h := range req.Header {
		hr.Header.Add(h[0], h[1])
	}
	if hr.Header.Get(channel.HeaderIdempotencyKey) == "" && m.IdempotencyKey != "" {
		hr.Header.Set(channel.HeaderIdempotencyKey, m.IdempotencyKey)
	}
	hr.Header.Set("User-Agent", "ql3-notify/1")
	t, err := s.transport(st.Proxy)
	if err != nil {
		return 0, err
	}
	resp, err := t.RoundTrip(hr)
	if err != nil {
		return 0, &SendError{Reason: transportReason(ctx, err)}
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes))
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return resp.StatusCode, &SendError{Status: resp.StatusCode, Reason: fmt.Sprintf("HTTP %d%s", resp.StatusCode, snippet(body))}
	}
	if reason := providerError(st.Kind, body); reason != "" {
		return resp.StatusCode, &SendError{Status: resp.StatusCode, Reason: reason}
	}
	return resp.StatusCode, nil
}

// transportReason says why no answer came, without the URL (url.Error
// quotes it, and a bot token is part of some providers' URLs).
func transportReason(ctx context.Context, err error) string {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) || errors.Is(err, context.DeadlineExceeded) {
		return "timed out"
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	msg := err.Error()
	switch {
	case strings.Contains(msg, "connection refused"):
		return "connection refused"
	case strings.Contains(msg, "no such host"):
		return "no such host"
	case strings.Contains(msg, "certificate"):
		return "TLS certificate not accepted"
	}
	return "request failed: " + notifykit.Truncate(msg, 200)
}

// snippet is the start of a provider's error answer, for the log.
func snippet(body []byte) string {
	s := strings.TrimSpace(string(body))
	if s == "" {
		return ""
	}
	return ": " + notifykit.Truncate(strings.Join(strings.Fields(s), " "), 200)
}

// providerError reads the providers that answer 200 with an error code.
func providerError(kind string, body []byte) string {
	var v struct {
		OK      *bool           `json:"ok"`
		ErrCode *int            `json:"errcode"`
		ErrMsg  string          `json:"errmsg"`
		Code    *int            `json:"code"`
		Msg     string          `json:"msg"`
		Message json.RawMessage `json:"message"`
		Desc    string          `json:"description"`
	}
	if json.Unmarshal(body, &v) != nil {
		return ""
	}
	switch kind {
	case channel.Telegram:
		if v.OK != nil && !*v.OK {
			return "telegram: " + notifykit.Truncate(v.Desc, 200)
		}
	case channel.DingTalk, channel.WeCom:
		if v.ErrCode != nil && *v.ErrCode != 0 {
			return fmt.Sprintf("%s: errcode %d %s", kind, *v.ErrCode, notifykit.Truncate(v.ErrMsg, 200))
		}
	case channel.Feishu, channel.ServerChan, channel.PushDeer:
		if v.Code != nil && *v.Code != 0 {
			return fmt.Sprintf("%s: code %d %s", kind, *v.Code, notifykit.Truncate(v.Msg, 200))
		}
	case channel.PushPlus:
		if v.Code != nil && *v.Code != 200 {
			return fmt.Sprintf("pushplus: code %d %s", *v.Code, notifykit.Truncate(v.Msg, 200))
		}
	}
	return ""
}

// sendMail sends m over SMTP: implicit TLS on port 465, STARTTLS when the
// server offers it otherwise; PLAIN authentication when a username is set.
func (s *Sender) sendMail(ctx context.Context, st channel.Settings, m channel.Message) error {
	msg := mail.NewMsg()
	if err := msg.From(st.From); err != nil {
		return &SendError{Reason: "from: not an address"}
	}
	if err := msg.To(st.To...); err != nil {
		return &SendError{Reason: "to: not an address"}
	}
	msg.Subject(m.Title)
	msg.SetBodyString(mail.TypeTextPlain, m.Content)
	if m.IdempotencyKey != "" {
		msg.SetGenHeader("X-Ql3-Idempotency-Key", m.IdempotencyKey)
		msg.SetMessageIDWithValue(messageID(m.IdempotencyKey))
	}
	opts := []mail.Option{mail.WithPort(st.SMTPPort), mail.WithTimeout(s.timeout())}
	if st.SMTPPort == 465 {
		opts = append(opts, mail.WithSSL())
	} else {
		opts = append(opts, mail.WithTLSPolicy(mail.TLSOpportunistic))
	}
	if st.Username != "" {
		opts = append(opts, mail.WithSMTPAuth(mail.SMTPAuthPlain), mail.WithUsername(st.Username), mail.WithPassword(st.Password))
	}
	c, err := mail.NewClient(st.SMTPHost, opts...)
	if err != nil {
		return &SendError{Reason: "smtp: " + notifykit.Truncate(err.Error(), 200)}
	}
	if err := c.DialAndSendWithContext(ctx, msg); err != nil {
		if ctx.Err() != nil {
			return &SendError{Reason: "timed out"}
		}
		return &SendError{Reason: "smtp: " + notifykit.Truncate(notifykit.Scrub(err.Error(), st.Password), 200)}
	}
	return nil
}

// messageID turns an idempotency key into a Message-ID's local part, so a
// mail resent after an unknown outcome carries the same id.
func messageID(key string) string {
	r := strings.NewReplacer(":", ".", "@", ".", "<", "", ">", "")
	return r.Replace(key) + "@ql3"
}
