package notify_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"strconv"
	"testing"

	cn "github.com/ql3/ql3/core/notify"
	"github.com/ql3/ql3/core/notify/channel"
	"github.com/ql3/ql3/core/run"
	"github.com/ql3/ql3/edge/notify"
)

func mac(key, msg string) []byte {
	h := hmac.New(sha256.New, []byte(key))
	h.Write([]byte(msg))
	return h.Sum(nil)
}

// wireCase is one provider's documented request, checked on a fake server.
type wireCase struct {
	name     string
	doc      string // the provider's documentation of the request
	settings func(server string) channel.Settings
	path     string
	query    func(nowMs int64) url.Values // nil: no query
	header   func(g got, title, content string, nowMs int64) map[string]string
	body     func(g got, title, content string, nowMs int64) any // decoded expectation
	form     bool
	raw      bool
}

func join(t, c string) string { return t + "\n\n" + c }

var wireCases = []wireCase{
	{name: "webhook", doc: "ql3's own webhook: README, section Notifications (HMAC-SHA256 over timestamp.body)",
		settings: func(s string) channel.Settings {
			return channel.Settings{Kind: channel.Webhook, Server: s + "/hooks/ql3", Secret: "whsec", Header: [][2]string{{"X-Team", "ops"}}}
		},
		path: "/hooks/ql3",
		header: func(g got, _, _ string, now int64) map[string]string {
			ts := strconv.FormatInt(now/1000, 10)
			return map[string]string{"Content-Type": "application/json", "X-Ql3-Timestamp": ts, "X-Team": "ops",
				"X-Ql3-Signature": "sha256=" + hex.EncodeToString(mac("whsec", ts+"."+string(g.Body)))}
		},
		body: func(g got, t, c string, _ int64) any {
			return map[string]any{"title": t, "content": c, "idempotencyKey": g.Header["Idempotency-Key"][0]}
		}},
	{name: "telegram", doc: "https://core.telegram.org/bots/api#sendmessage",
		settings: func(s string) channel.Settings {
			return channel.Settings{Kind: channel.Telegram, Server: s, Token: "123456:ABC-tg", ChatID: "-100777"}
		},
		path: "/bot123456:ABC-tg/sendMessage",
		body: func(_ got, t, c string, _ int64) any {
			return map[string]any{"chat_id": "-100777", "text": join(t, c), "disable_web_page_preview": true}
		}},
	{name: "bark", doc: "https://github.com/Finb/bark-server/blob/master/docs/API_V2.md",
		settings: func(s string) channel.Settings {
			return channel.Settings{Kind: channel.Bark, Server: s, Token: "barkDeviceKey"}
		},
		path: "/push",
		body: func(_ got, t, c string, _ int64) any {
			return map[string]any{"device_key": "barkDeviceKey", "title": t, "body": c, "group": "ql3"}
		}},
	{name: "serverchan", doc: "https://sct.ftqq.com/sendkey", form: true,
		settings: func(s string) channel.Settings {
			return channel.Settings{Kind: channel.ServerChan, Server: s, Token: "SCT12345abc"}
		},
		path: "/SCT12345abc.send",
		body: func(_ got, t, c string, _ int64) any { return url.Values{"title": {t}, "desp": {c}} }},
	{name: "pushplus", doc: "https://www.pushplus.plus/doc/guide/api.html",
		settings: func(s string) channel.Settings {
			return channel.Settings{Kind: channel.PushPlus, Server: s, Token: "ppToken"}
		},
		path: "/send",
		body: func(_ got, t, c string, _ int64) any {
			return map[string]any{"token": "ppToken", "title": t, "content": c, "template": "txt"}
		}},
	{name: "dingtalk", doc: "https://open.dingtalk.com/document/robots/customize-robot-security-settings",
		settings: func(s string) channel.Settings {
			return channel.Settings{Kind: channel.DingTalk, Server: s, Token: "dtAccess", Secret: "SECdt"}
		},
		path: "/robot/send",
		query: func(now int64) url.Values {
			ts := strconv.FormatInt(now, 10)
			return url.Values{"access_token": {"dtAccess"}, "timestamp": {ts},
				"sign": {base64.StdEncoding.EncodeToString(mac("SECdt", ts+"\n"+"SECdt"))}}
		},
		body: func(_ got, t, c string, _ int64) any {
			return map[string]any{"msgtype": "text", "text": map[string]any{"content": join(t, c)}}
		}},
	{name: "wecom", doc: "https://developer.work.weixin.qq.com/document/path/91770",
		settings: func(s string) channel.Settings {
			return channel.Settings{Kind: channel.WeCom, Server: s, Token: "wecomKey"}
		},
		path:  "/cgi-bin/webhook/send",
		query: func(int64) url.Values { return url.Values{"key": {"wecomKey"}} },
		body: func(_ got, t, c string, _ int64) any {
			return map[string]any{"msgtype": "text", "text": map[string]any{"content": join(t, c)}}
		}},
	{name: "feishu", doc: "https://open.feishu.cn/document/client-docs/bot-v3/add-custom-bot",
		settings: func(s string) channel.Settings {
			return channel.Settings{Kind: channel.Feishu, Server: s, Token: "hook-uuid", Secret: "fsSecret"}
		},
		path: "/open-apis/bot/v2/hook/hook-uuid",
		body: func(_ got, t, c string, now int64) any {
			ts := strconv.FormatInt(now/1000, 10)
			h := hmac.New(sha256.New, []byte(ts+"\n"+"fsSecret"))
			return map[string]any{"msg_type": "text", "content": map[string]any{"text": join(t, c)}, "timestamp": ts,
				"sign": base64.StdEncoding.EncodeToString(h.Sum(nil))}
		}},
	{name: "gotify", doc: "https://gotify.net/api-docs#/message/createMessage",
		settings: func(s string) channel.Settings {
			return channel.Settings{Kind: channel.Gotify, Server: s, Token: "gotifyApp"}
		},
		path: "/message",
		header: func(got, string, string, int64) map[string]string {
			return map[string]string{"X-Gotify-Key": "gotifyApp", "Content-Type": "application/json"}
		},
		body: func(_ got, t, c string, _ int64) any {
			return map[string]any{"title": t, "message": c, "priority": float64(5)}
		}},
	{name: "ntfy", doc: "https://docs.ntfy.sh/publish/", raw: true,
		settings: func(s string) channel.Settings {
			return channel.Settings{Kind: channel.Ntfy, Server: s, Topic: "ql3-alerts", Token: "tk_ntfy"}
		},
		path: "/ql3-alerts",
		header: func(_ got, t, _ string, _ int64) map[string]string {
			return map[string]string{"Title": t, "Authorization": "Bearer tk_ntfy", "Content-Type": "text/plain; charset=utf-8"}
		},
		body: func(_ got, _, c string, _ int64) any { return c }},
	{name: "pushdeer", doc: "https://github.com/easychen/pushdeer (API: /message/push)", form: true,
		settings: func(s string) channel.Settings {
			return channel.Settings{Kind: channel.PushDeer, Server: s, Token: "PDU1key"}
		},
		path: "/message/push",
		body: func(_ got, t, c string, _ int64) any {
			return url.Values{"pushkey": {"PDU1key"}, "text": {t}, "desp": {c}, "type": {"markdown"}}
		}},
}

func (wc wireCase) check(t *testing.T, g got, title, content string, now int64) {
	t.Helper()
	if g.Method != "POST" || g.Path != wc.path {
		t.Errorf("%s %s, want POST %s (%s)", g.Method, g.Path, wc.path, wc.doc)
	}
	var wantQ url.Values
	if wc.query != nil {
		wantQ = wc.query(now)
	}
	if gotQ, _ := url.ParseQuery(g.RawQuery); len(gotQ)+len(wantQ) > 0 && !reflect.DeepEqual(gotQ, wantQ) {
		t.Errorf("query %v, want %v (%s)", gotQ, wantQ, wc.doc)
	}
	want := map[string]string{}
	switch {
	case wc.form:
		want["Content-Type"] = "application/x-www-form-urlencoded"
	case !wc.raw:
		want["Content-Type"] = "application/json"
	}
	if wc.header != nil {
		for k, v := range wc.header(g, title, content, now) {
			want[k] = v
		}
	}
	for k, v := range want {
		if h := g.Header[http.CanonicalHeaderKey(k)]; len(h) != 1 || h[0] != v {
			t.Errorf("header %s = %v, want %q (%s)", k, h, v, wc.doc)
		}
	}
	if len(g.Header["Idempotency-Key"]) != 1 || g.Header["Idempotency-Key"][0] == "" {
		t.Errorf("no Idempotency-Key header")
	}
	wantBody := wc.body(g, title, content, now)
	var gotBody any
	switch {
	case wc.form:
		gotBody, _ = url.ParseQuery(string(g.Body))
	case wc.raw:
		gotBody = string(g.Body)
	default:
		var m map[string]any
		if err := json.Unmarshal(g.Body, &m); err != nil {
			t.Fatalf("body is not JSON: %s", g.Body)
		}
		gotBody = m
	}
	if !reflect.DeepEqual(gotBody, wantBody) {
		t.Errorf("body\n got %#v\nwant %#v\n(%s)", gotBody, wantBody, wc.doc)
	}
}

// TestEveryChannelOnTheWire: a run failure and a "send test" through each
// HTTP channel reach a fake provider exactly as the provider documents.
func TestEveryChannelOnTheWire(t *testing.T) {
	for _, wc := range wireCases {
		t.Run(wc.name, func(t *testing.T) {
			e := newEnv(t)
			ts, h := receiver(t, 200)
			ch := e.channel(wc.name, wc.settings(ts.URL))
			e.rule("r", notify.RuleInput{Rule: cn.Rule{Channels: []string{ch.ID}}})
			r := e.finish(run.AttemptFailed)
			e.step()
			all := h.all()
			if len(all) != 1 {
				t.Fatalf("%d requests, want 1", len(all))
			}
			now := e.clk.Now().UnixMilli()
			content := fmt.Sprintf("task: checkin\nrun: %s\nattempt: 1\nexit code: 3\nerror: process_exit", r.ID)
			wc.check(t, all[0], "ql3: checkin failed", content, now)

			d, err := e.d.SendTest(e.ctx, ch.ID, "test")
			if err != nil {
				t.Fatal(err)
			}
			if d.Status != notify.StatusDelivered || d.Kind != notify.KindTest {
				t.Fatalf("test send: %+v", d)
			}
			all = h.all()
			if len(all) != 2 {
				t.Fatalf("%d requests after the test send, want 2", len(all))
			}
			wc.check(t, all[1], "ql3: test notification", fmt.Sprintf("This is a test of the channel %q from ql3-edge.", wc.name), now)
		})
	}
}

// A provider that answers 200 with an error code is a failed attempt.
func TestProviderErrorCodeIsAFailure(t *testing.T) {
	e := newEnv(t)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Write([]byte(`{"errcode":310000,"errmsg":"sign not match"}`))
	}))
	defer ts.Close()
	ch := e.channel("dt", channel.Settings{Kind: channel.DingTalk, Server: ts.URL, Token: "t0ken", Secret: "s"})
	d, err := e.d.SendTest(e.ctx, ch.ID, "test")
	if err != nil {
		t.Fatal(err)
	}
	if d.Status != notify.StatusFailed || d.LastError != "dingtalk: errcode 310000 sign not match" || d.LastStatus != 200 {
		t.Fatalf("%+v", d)
	}
}

// A channel's http:// proxy carries its requests (Telegram behind a proxy
// is the common case).
func TestChannelProxy(t *testing.T) {
	e := newEnv(t)
	var seen []string
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		seen = append(seen, r.Method+" "+r.URL.String())
		w.Write([]byte(`{"ok":true}`))
	}))
	defer proxy.Close()
	ch := e.channel("tg", channel.Settings{Kind: channel.Telegram, Server: "http://telegram.invalid", Token: "1:t", ChatID: "7", Proxy: proxy.URL})
	d, err := e.d.SendTest(e.ctx, ch.ID, "test")
	if err != nil {
		t.Fatal(err)
	}
	if d.Status != notify.StatusDelivered || len(seen) != 1 || seen[0] != "POST http://telegram.invalid/bot1:t/sendMessage" {
		t.Fatalf("delivery %s, proxy saw %q", d.Status, seen)
	}
}
