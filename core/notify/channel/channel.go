// Package channel builds the HTTP request each notification provider
// documents, from a channel's settings and one message. It is pure: the
// caller supplies the time and sends the request (with the channel's
// proxy and a timeout); tests compare the built request with the
// provider's documentation and fake servers assert it on the wire.
//
// Credentials are fields of Settings; callers keep them in the secret
// store and never log a Request (its URL or headers may hold a token).
package channel

import (
	"fmt"
	"net/url"
	"sort"
	"strings"

	"github.com/ql3/ql3/core/errs"
)

// Kinds of channel.
const (
	Webhook    = "webhook"
	Telegram   = "telegram"
	Bark       = "bark"
	ServerChan = "serverchan"
	PushPlus   = "pushplus"
	DingTalk   = "dingtalk"
	WeCom      = "wecom"
	Feishu     = "feishu"
	Gotify     = "gotify"
	Ntfy       = "ntfy"
	PushDeer   = "pushdeer"
	Email      = "email" // SMTP: sent by the binary's mail client, not an HTTP request
)

// Kinds lists every channel kind.
var Kinds = []string{Webhook, Telegram, Bark, ServerChan, PushPlus, DingTalk, WeCom, Feishu, Gotify, Ntfy, PushDeer, Email}

// Message is one notification.
type Message struct {
	Title          string
	Content        string
	IdempotencyKey string
}

// Limits of a message (providers cut longer texts or refuse them;
// Telegram's text limit is 4096 characters).
const (
	MaxTitleBytes   = 256
	MaxContentBytes = 16 << 10
)

// Request is what to send.
type Request struct {
	Method string
	URL    string
	Header [][2]string // in order; names canonical
	Body   []byte
}

// Settings are a channel's configuration. Which fields a kind needs is
// checked by Validate; secret fields are marked in SecretFields.
type Settings struct {
	Kind string
	// Server overrides a provider's default base URL (self-hosted Bark,
	// Gotify, ntfy, PushDeer; a Telegram API mirror) and is the target
	// of a webhook.
	Server string
	Token  string // bot token, access token, device key, send key, app token, push key
	Secret string // signing secret (webhook HMAC, DingTalk, Feishu)
	ChatID string // Telegram chat id
	Topic  string // ntfy topic, PushPlus group topic
	Header [][2]string
	Proxy  string // http, https or socks5 URL; empty = direct
	// Email (SMTP)
	SMTPHost string
	SMTPPort int
	Username string
	Password string
	From     string
	To       []string
}

// SecretFields are the Settings fields that are credentials: stored
// encrypted, never returned by an API, never logged.
var SecretFields = []string{"token", "secret", "password"}

// Validate checks the fields kind needs.
func (s Settings) Validate() error {
	need := func(field, v string) error {
		if strings.TrimSpace(v) == "" {
			return errs.Invalidf(field, "is required for a %s channel", s.Kind)
		}
		if len(v) > 4096 {
			return errs.TooLargef(field, "is %d bytes, limit is 4096", len(v))
		}
		return nil
	}
	if s.Proxy != "" {
		u, err := url.Parse(s.Proxy)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https" && u.Scheme != "socks5") || u.Host == "" {
			return errs.Invalidf("proxy", "must be an http://, https:// or socks5:// URL with a host")
		}
	}
	if s.Server != "" {
		u, err := url.Parse(s.Server)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return errs.Invalidf("server", "must be an http:// or https:// URL with a host")
		}
	}
	if len(s.Header) > 32 {
		return errs.TooLargef("headers", "has %d entries, limit is 32", len(s.Header))
	}
	for i, h := range s.Header {
		if !validHeaderName(h[0]) || strings.ContainsAny(h[1], "\r\n\x00") {
			return errs.Invalidf(fmt.Sprintf("headers[%d]", i), "must be a valid header name and a value without line breaks")
		}
	}
	if strings.ContainsAny(s.Token, " \t\r\n\x00/?#") {
		return errs.Invalidf("token", "must not contain spaces, line breaks, '/', '?' or '#' (it becomes part of a URL)")
	}
	switch s.Kind {
	case Webhook:
		return need("server", s.Server)
	case Telegram:
		if err := need("token", s.Token); err != nil {
			return err
		}
		return need("chatId", s.ChatID)
	case Bark, ServerChan, PushPlus, DingTalk, WeCom, Feishu, Gotify, PushDeer:
		if s.Kind == Gotify {
			if err := need("server", s.Server); err != nil {
				return err
			}
		}
		return need("token", s.Token)
	case Ntfy:
		return need("topic", s.Topic)
	case Email:
		for _, f := range [][2]string{{"smtpHost", s.SMTPHost}, {"from", s.From}} {
			if err := need(f[0], f[1]); err != nil {
				return err
			}
		}
		if s.SMTPPort < 1 || s.SMTPPort > 65535 {
			return errs.Invalidf("smtpPort", "must be 1..65535, got %d", s.SMTPPort)
		}
		if len(s.To) == 0 || len(s.To) > 32 {
			return errs.Invalidf("to", "must list 1..32 addresses, got %d", len(s.To))
		}
		return nil
	}
	return errs.Invalidf("kind", "must be one of %s, got %q", strings.Join(sortedKinds(), ", "), s.Kind)
}

func sortedKinds() []string {
	k := append([]string(nil), Kinds...)
	sort.Strings(k)
	return k
}

func validHeaderName(n string) bool {
	if n == "" || len(n) > 128 {
		return false
	}
	for i := 0; i < len(n); i++ {
		c := n[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
			return false
		}
	}
	return true
}

// CheckMessage bounds a message (a script's sendNotify is user input).
func CheckMessage(m Message) error {
	if len(m.Title) > MaxTitleBytes {
		return errs.TooLargef("title", "is %d bytes, limit is %d", len(m.Title), MaxTitleBytes)
	}
	if len(m.Content) > MaxContentBytes {
		return errs.TooLargef("content", "is %d bytes, limit is %d", len(m.Content), MaxContentBytes)
	}
	if m.Title == "" && m.Content == "" {
		return errs.Invalidf("title", "title or content is required")
	}
	return nil
}
