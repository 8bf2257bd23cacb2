package notifykit

import (
	"encoding/json"
	"net/url"
	"sort"
	"strings"

	"github.com/ql3/ql3/core/errs"
	cn "github.com/ql3/ql3/core/notify"
	"github.com/ql3/ql3/core/notify/channel"
)

// settingsJSON is how a channel's settings are sealed (whole, so a URL or
// a header that carries a token is as protected as a token field).
type settingsJSON struct {
	Kind     string      `json:"kind"`
	Server   string      `json:"server,omitempty"`
	Token    string      `json:"token,omitempty"`
	Secret   string      `json:"secret,omitempty"`
	ChatID   string      `json:"chatId,omitempty"`
	Topic    string      `json:"topic,omitempty"`
	Header   [][2]string `json:"headers,omitempty"`
	Proxy    string      `json:"proxy,omitempty"`
	SMTPHost string      `json:"smtpHost,omitempty"`
	SMTPPort int         `json:"smtpPort,omitempty"`
	Username string      `json:"username,omitempty"`
	Password string      `json:"password,omitempty"`
	From     string      `json:"from,omitempty"`
	To       []string    `json:"to,omitempty"`
}

// EncodeSettings is the plaintext that gets sealed.
func EncodeSettings(s channel.Settings) []byte {
	b, _ := json.Marshal(settingsJSON(s)) // strings, ints and slices always encode
	return b
}

// DecodeSettings opens EncodeSettings' bytes.
func DecodeSettings(b []byte) (channel.Settings, error) {
	var j settingsJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return channel.Settings{}, errs.E(errs.Internal, "", "sealed channel settings do not decode: %v", err)
	}
	return channel.Settings(j), nil
}

// CheckSettings validates settings for storing: the kind's fields, and a
// proxy this binary can use (http and https; socks5 is refused: the edge
// does not link a SOCKS client).
func CheckSettings(s channel.Settings) error {
	if err := s.Validate(); err != nil {
		return errs.Prefix("settings", err)
	}
	if s.Kind == channel.Email && s.Proxy != "" {
		return errs.Invalidf("settings.proxy", "email is sent directly over SMTP; a proxy is not supported for it")
	}
	if strings.HasPrefix(s.Proxy, "socks5:") {
		return errs.Invalidf("settings.proxy", "socks5 proxies are not supported by ql3-edge yet; use an http:// or https:// proxy")
	}
	return nil
}

// Merge applies a patch's settings over the stored ones: credentials,
// server and headers left empty keep their stored values (they are
// write-only); a different kind replaces everything.
func Merge(old, p channel.Settings) channel.Settings {
	if p.Kind != old.Kind {
		return p
	}
	if p.Token == "" {
		p.Token = old.Token
	}
	if p.Secret == "" {
		p.Secret = old.Secret
	}
	if p.Password == "" {
		p.Password = old.Password
	}
	if p.Server == "" {
		p.Server = old.Server
	}
	if p.Header == nil {
		p.Header = old.Header
	}
	return p
}

// Public is the view of s without any credential.
func Public(s channel.Settings) PublicSettings {
	p := PublicSettings{ChatID: s.ChatID, Topic: s.Topic, SMTPHost: s.SMTPHost, SMTPPort: s.SMTPPort, From: s.From,
		To: append([]string(nil), s.To...), Server: origin(s.Server), Proxy: origin(s.Proxy)}
	for _, h := range s.Header {
		p.HeaderNames = append(p.HeaderNames, h[0])
	}
	for _, f := range [][2]string{{"token", s.Token}, {"secret", s.Secret}, {"password", s.Password}, {"username", s.Username}} {
		if f[1] != "" {
			p.SecretsSet = append(p.SecretsSet, f[0])
		}
	}
	if s.Kind == channel.Webhook && s.Server != "" {
		p.SecretsSet = append(p.SecretsSet, "server")
	}
	sort.Strings(p.SecretsSet)
	return p
}

// origin keeps scheme://host of a URL (no user info, path or query: a
// webhook URL or a proxy URL may carry a credential there).
func origin(raw string) string {
	if raw == "" {
		return ""
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return ""
	}
	return u.Scheme + "://" + u.Host
}

// SealName is the additional data a channel's sealed settings are bound
// to, with the channel's id (a blob moved to another row does not open).
const SealName = "nt.channel.settings"

// ruleBody is a rule's stored JSON (both binaries).
type ruleBody struct {
	Kinds    []cn.Kind      `json:"kinds"`
	TaskIDs  []string       `json:"taskIds,omitempty"`
	Labels   []string       `json:"labels,omitempty"`
	Channels []string       `json:"channels"`
	Quiet    *cn.QuietHours `json:"quiet,omitempty"`
	Coalesce cn.Coalesce    `json:"coalesce"`
}

// EncodeRule is a validated rule's stored body (everything but its id,
// name and enabled flag, which are columns).
func EncodeRule(r cn.Rule) string {
	b, _ := json.Marshal(ruleBody{Kinds: r.Kinds, TaskIDs: r.TaskIDs, Labels: r.Labels, Channels: r.Channels, Quiet: r.Quiet, Coalesce: r.Coalesce})
	return string(b)
}

// DecodeRule fills r from EncodeRule's body.
func DecodeRule(body string, r *cn.Rule) error {
	var b ruleBody
	if err := json.Unmarshal([]byte(body), &b); err != nil {
		return err
	}
	r.Kinds, r.TaskIDs, r.Labels, r.Channels, r.Quiet, r.Coalesce = b.Kinds, b.TaskIDs, b.Labels, b.Channels, b.Quiet, b.Coalesce
	return nil
}
