package channel

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/url"
	"strings"
	"testing"
)

const nowMs = 1767225600123 // 2026-01-01T00:00:00.123Z

var msg = Message{Title: "ql3: 签到 failed", Content: "exit code 1", IdempotencyKey: "ql3:notify:v1:r:c:42:failed"}

func header(r Request, name string) string {
	for _, h := range r.Header {
		if strings.EqualFold(h[0], name) {
			return h[1]
		}
	}
	return ""
}

func jsonBody(t *testing.T, r Request) map[string]any {
	t.Helper()
	var v map[string]any
	if err := json.Unmarshal(r.Body, &v); err != nil {
		t.Fatalf("body is not JSON: %v: %s", err, r.Body)
	}
	return v
}

func build(t *testing.T, s Settings) Request {
	t.Helper()
	if err := s.Validate(); err != nil {
		t.Fatalf("Validate(%+v): %v", s, err)
	}
	r, err := Build(s, msg, nowMs)
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	if r.Method != "POST" {
		t.Fatalf("method %s", r.Method)
	}
	return r
}

func TestTelegram(t *testing.T) {
	// https://core.telegram.org/bots/api#sendmessage
	r := build(t, Settings{Kind: Telegram, Token: "123:ABC", ChatID: "-100200"})
	if r.URL != "https://api.telegram.org/bot123:ABC/sendMessage" {
		t.Errorf("url %s", r.URL)
	}
	b := jsonBody(t, r)
	if b["chat_id"] != "-100200" || b["text"] != "ql3: 签到 failed\n\nexit code 1" || b["disable_web_page_preview"] != true {
		t.Errorf("body %v", b)
	}
	if r2 := build(t, Settings{Kind: Telegram, Token: "1:x", ChatID: "9", Server: "https://tg.example.test/"}); !strings.HasPrefix(r2.URL, "https://tg.example.test/bot1:x/") {
		t.Errorf("mirror url %s", r2.URL)
	}
}

func TestBark(t *testing.T) {
	// https://github.com/Finb/bark-server/blob/master/docs/API_V2.md
	r := build(t, Settings{Kind: Bark, Token: "devkey"})
	b := jsonBody(t, r)
	if r.URL != "https://api.day.app/push" || b["device_key"] != "devkey" || b["title"] != msg.Title || b["body"] != msg.Content {
		t.Errorf("%s %v", r.URL, b)
	}
}

func TestServerChan(t *testing.T) {
	// https://sct.ftqq.com/sendkey
	r := build(t, Settings{Kind: ServerChan, Token: "SCT123"})
	v, _ := url.ParseQuery(string(r.Body))
	if r.URL != "https://sctapi.ftqq.com/SCT123.send" || v.Get("title") != msg.Title || v.Get("desp") != msg.Content ||
		header(r, "Content-Type") != "application/x-www-form-urlencoded" {
		t.Errorf("%s %v", r.URL, v)
	}
}

func TestPushPlus(t *testing.T) {
	// https://www.pushplus.plus/doc/guide/api.html
	r := build(t, Settings{Kind: PushPlus, Token: "tok", Topic: "grp"})
	b := jsonBody(t, r)
	if r.URL != "https://www.pushplus.plus/send" || b["token"] != "tok" || b["content"] != msg.Content || b["topic"] != "grp" || b["template"] != "txt" {
		t.Errorf("%s %v", r.URL, b)
	}
}

func TestDingTalkSigned(t *testing.T) {
	// https://open.dingtalk.com/document/robots/customize-robot-security-settings
	r := build(t, Settings{Kind: DingTalk, Token: "at", Secret: "SEC000"})
	u, err := url.Parse(r.URL)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	mac := hmac.New(sha256.New, []byte("SEC000"))
	mac.Write([]byte("1767225600123\nSEC000"))
	if u.Host != "oapi.dingtalk.com" || u.Path != "/robot/send" || q.Get("access_token") != "at" ||
		q.Get("timestamp") != "1767225600123" || q.Get("sign") != base64.StdEncoding.EncodeToString(mac.Sum(nil)) {
		t.Errorf("url %s", r.URL)
	}
	b := jsonBody(t, r)
	if b["msgtype"] != "text" || b["text"].(map[string]any)["content"] != "ql3: 签到 failed\n\nexit code 1" {
		t.Errorf("body %v", b)
	}
}

func TestWeCom(t *testing.T) {
	// https://developer.work.weixin.qq.com/document/path/91770
	r := build(t, Settings{Kind: WeCom, Token: "k-1"})
	b := jsonBody(t, r)
	if r.URL != "https://qyapi.weixin.qq.com/cgi-bin/webhook/send?key=k-1" || b["msgtype"] != "text" {
		t.Errorf("%s %v", r.URL, b)
	}
}

func TestFeishuSigned(t *testing.T) {
	// https://open.feishu.cn/document/client-docs/bot-v3/add-custom-bot
	r := build(t, Settings{Kind: Feishu, Token: "hook-id", Secret: "fs"})
	b := jsonBody(t, r)
	mac := hmac.New(sha256.New, []byte("1767225600\nfs"))
	if r.URL != "https://open.feishu.cn/open-apis/bot/v2/hook/hook-id" || b["timestamp"] != "1767225600" ||
		b["sign"] != base64.StdEncoding.EncodeToString(mac.Sum(nil)) || b["msg_type"] != "text" {
		t.Errorf("%s %v", r.URL, b)
	}
}

func TestGotify(t *testing.T) {
	// https://gotify.net/api-docs#/message/createMessage
	r := build(t, Settings{Kind: Gotify, Server: "https://push.example.test/", Token: "app"})
	b := jsonBody(t, r)
	if r.URL != "https://push.example.test/message" || header(r, "X-Gotify-Key") != "app" || b["message"] != msg.Content || b["priority"] != float64(5) {
		t.Errorf("%s %v", r.URL, b)
	}
}

func TestNtfy(t *testing.T) {
	// https://docs.ntfy.sh/publish/
	r := build(t, Settings{Kind: Ntfy, Topic: "my-alerts", Token: "tk_x"})
	if r.URL != "https://ntfy.sh/my-alerts" || string(r.Body) != msg.Content || header(r, "Title") != msg.Title ||
		header(r, "Authorization") != "Bearer tk_x" {
		t.Errorf("%s %v %s", r.URL, r.Header, r.Body)
	}
}

func TestPushDeer(t *testing.T) {
	// https://github.com/easychen/pushdeer (POST /message/push)
	r := build(t, Settings{Kind: PushDeer, Token: "PDU1"})
	v, _ := url.ParseQuery(string(r.Body))
	if r.URL != "https://api2.pushdeer.com/message/push" || v.Get("pushkey") != "PDU1" || v.Get("text") != msg.Title || v.Get("desp") != msg.Content {
		t.Errorf("%s %v", r.URL, v)
	}
}

func TestWebhookSignature(t *testing.T) {
	r := build(t, Settings{Kind: Webhook, Server: "https://hooks.example.test/in", Secret: "shh", Header: [][2]string{{"X-Team", "ops"}}})
	ts := header(r, HeaderTimestamp)
	if ts != "1767225600" || header(r, HeaderIdempotencyKey) != msg.IdempotencyKey || header(r, "X-Team") != "ops" {
		t.Fatalf("headers %v", r.Header)
	}
	mac := hmac.New(sha256.New, []byte("shh"))
	mac.Write([]byte(ts + "."))
	mac.Write(r.Body)
	if got := header(r, HeaderSignature); got != "sha256="+hexString(mac.Sum(nil)) {
		t.Errorf("signature %s", got)
	}
	b := jsonBody(t, r)
	if b["title"] != msg.Title || b["idempotencyKey"] != msg.IdempotencyKey {
		t.Errorf("body %v", b)
	}
}

func hexString(b []byte) string {
	const digits = "0123456789abcdef"
	out := make([]byte, 0, 2*len(b))
	for _, c := range b {
		out = append(out, digits[c>>4], digits[c&15])
	}
	return string(out)
}

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		s    Settings
		want string
	}{
		{Settings{Kind: "pager"}, "kind: must be one of"},
		{Settings{Kind: Telegram, Token: "x"}, "chatId: is required"},
		{Settings{Kind: Telegram, Token: "a/b", ChatID: "1"}, "token: must not contain"},
		{Settings{Kind: Gotify, Token: "x"}, "server: is required"},
		{Settings{Kind: Ntfy}, "topic: is required"},
		{Settings{Kind: Webhook}, "server: is required"},
		{Settings{Kind: Webhook, Server: "ftp://x"}, "server: must be an http"},
		{Settings{Kind: Bark, Token: "x", Proxy: "gopher://p"}, "proxy: must be"},
		{Settings{Kind: Webhook, Server: "https://x", Header: [][2]string{{"Bad Name", "v"}}}, "headers[0]"},
		{Settings{Kind: Webhook, Server: "https://x", Header: [][2]string{{"X", "a\r\nb"}}}, "headers[0]"},
		{Settings{Kind: Email, SMTPHost: "smtp.example.test", From: "a@x", SMTPPort: 0, To: []string{"b@x"}}, "smtpPort"},
		{Settings{Kind: Email, SMTPHost: "smtp.example.test", From: "a@x", SMTPPort: 465}, "to: must list"},
	} {
		if err := tc.s.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Validate(%+v) = %v, want %q", tc.s, err, tc.want)
		}
	}
	if err := (Settings{Kind: Telegram, Token: "1:x", ChatID: "1", Proxy: "socks5://127.0.0.1:1080"}).Validate(); err != nil {
		t.Errorf("socks5 proxy refused: %v", err)
	}
}

func TestCheckMessage(t *testing.T) {
	if err := CheckMessage(Message{Title: strings.Repeat("x", MaxTitleBytes+1)}); err == nil || !strings.Contains(err.Error(), "title: is 257 bytes, limit is 256") {
		t.Errorf("title: %v", err)
	}
	if err := CheckMessage(Message{Content: strings.Repeat("x", MaxContentBytes+1)}); err == nil || !strings.Contains(err.Error(), "content") {
		t.Errorf("content: %v", err)
	}
	if err := CheckMessage(Message{}); err == nil {
		t.Error("empty message accepted")
	}
}
