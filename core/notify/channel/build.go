package channel

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/url"
	"strconv"
	"strings"

	"github.com/ql3/ql3/core/errs"
)

// Default servers of the hosted providers.
const (
	TelegramAPI   = "https://api.telegram.org"
	BarkServer    = "https://api.day.app"
	ServerChanAPI = "https://sctapi.ftqq.com"
	PushPlusAPI   = "https://www.pushplus.plus"
	DingTalkAPI   = "https://oapi.dingtalk.com"
	WeComAPI      = "https://qyapi.weixin.qq.com"
	FeishuAPI     = "https://open.feishu.cn"
	NtfyServer    = "https://ntfy.sh"
	PushDeerAPI   = "https://api2.pushdeer.com"
)

// Webhook headers (ours; the receiver verifies the signature over
// timestamp + "." + body with the shared secret, and dedupes on the key).
const (
	HeaderIdempotencyKey = "Idempotency-Key"
	HeaderTimestamp      = "X-Ql3-Timestamp"
	HeaderSignature      = "X-Ql3-Signature"
)

// Build returns the request that delivers m through s at nowMs (signing
// schemes include the time). s must have passed Validate; m CheckMessage.
func Build(s Settings, m Message, nowMs int64) (Request, error) {
	switch s.Kind {
	case Webhook:
		return buildWebhook(s, m, nowMs)
	case Telegram:
		// https://core.telegram.org/bots/api#sendmessage
		return jsonPost(base(s, TelegramAPI)+"/bot"+s.Token+"/sendMessage", map[string]any{
			"chat_id": s.ChatID, "text": join(m), "disable_web_page_preview": true,
		})
	case Bark:
		// https://github.com/Finb/bark-server/blob/master/docs/API_V2.md (POST /push)
		return jsonPost(base(s, BarkServer)+"/push", map[string]any{
			"device_key": s.Token, "title": m.Title, "body": m.Content, "group": "ql3",
		})
	case ServerChan:
		// https://sct.ftqq.com/sendkey (Turbo: POST https://sctapi.ftqq.com/<SENDKEY>.send, form title/desp)
		return formPost(base(s, ServerChanAPI)+"/"+url.PathEscape(s.Token)+".send", url.Values{
			"title": {m.Title}, "desp": {m.Content},
		}), nil
	case PushPlus:
		// https://www.pushplus.plus/doc/guide/api.html (POST /send, JSON token/title/content/template)
		body := map[string]any{"token": s.Token, "title": m.Title, "content": m.Content, "template": "txt"}
		if s.Topic != "" {
			body["topic"] = s.Topic
		}
		return jsonPost(base(s, PushPlusAPI)+"/send", body)
	case DingTalk:
		// https://open.dingtalk.com/document/robots/customize-robot-security-settings
		// sign = urlencode(base64(HmacSHA256(secret, timestamp + "\n" + secret))), timestamp in ms.
		q := url.Values{"access_token": {s.Token}}
		if s.Secret != "" {
			ts := strconv.FormatInt(nowMs, 10)
			q.Set("timestamp", ts)
			q.Set("sign", base64.StdEncoding.EncodeToString(hmacSHA256([]byte(s.Secret), []byte(ts+"\n"+s.Secret))))
		}
		return jsonPost(base(s, DingTalkAPI)+"/robot/send?"+q.Encode(), map[string]any{
			"msgtype": "text", "text": map[string]any{"content": join(m)},
		})
	case WeCom:
		// https://developer.work.weixin.qq.com/document/path/91770 (group robot webhook)
		return jsonPost(base(s, WeComAPI)+"/cgi-bin/webhook/send?key="+url.QueryEscape(s.Token), map[string]any{
			"msgtype": "text", "text": map[string]any{"content": join(m)},
		})
	case Feishu:
		// https://open.feishu.cn/document/client-docs/bot-v3/add-custom-bot
		// sign = base64(HmacSHA256(key = timestamp + "\n" + secret, message = "")), timestamp in s.
		body := map[string]any{"msg_type": "text", "content": map[string]any{"text": join(m)}}
		if s.Secret != "" {
			ts := strconv.FormatInt(nowMs/1000, 10)
			body["timestamp"] = ts
			body["sign"] = base64.StdEncoding.EncodeToString(hmacSHA256([]byte(ts+"\n"+s.Secret), nil))
		}
		return jsonPost(base(s, FeishuAPI)+"/open-apis/bot/v2/hook/"+url.PathEscape(s.Token), body)
	case Gotify:
		// https://gotify.net/api-docs#/message/createMessage (X-Gotify-Key: app token)
		r, err := jsonPost(strings.TrimRight(s.Server, "/")+"/message", map[string]any{
			"title": m.Title, "message": m.Content, "priority": 5,
		})
		r.Header = append(r.Header, [2]string{"X-Gotify-Key", s.Token})
		return r, err
	case Ntfy:
		// https://docs.ntfy.sh/publish/ (POST /<topic>, body = message, Title header)
		r := Request{Method: "POST", URL: base(s, NtfyServer) + "/" + url.PathEscape(s.Topic), Body: []byte(m.Content),
			Header: [][2]string{{"Content-Type", "text/plain; charset=utf-8"}, {"Title", headerSafe(m.Title)}}}
		if s.Token != "" {
			r.Header = append(r.Header, [2]string{"Authorization", "Bearer " + s.Token})
		}
		return r, nil
	case PushDeer:
		// https://github.com/easychen/pushdeer (POST /message/push, form pushkey/text/desp/type)
		return formPost(base(s, PushDeerAPI)+"/message/push", url.Values{
			"pushkey": {s.Token}, "text": {m.Title}, "desp": {m.Content}, "type": {"markdown"},
		}), nil
	case Email:
		return Request{}, errs.Invalidf("kind", "email is sent over SMTP, not as an HTTP request")
	}
	return Request{}, errs.Invalidf("kind", "unknown channel kind %q", s.Kind)
}

// buildWebhook posts our JSON with a signature the receiver can check:
// X-Ql3-Signature: sha256=<hex HMAC-SHA256(secret, timestamp "." body)>.
func buildWebhook(s Settings, m Message, nowMs int64) (Request, error) {
	body, err := json.Marshal(map[string]any{"title": m.Title, "content": m.Content, "idempotencyKey": m.IdempotencyKey})
	if err != nil {
		return Request{}, err
	}
	ts := strconv.FormatInt(nowMs/1000, 10)
	r := Request{Method: "POST", URL: s.Server, Body: body, Header: [][2]string{
		{"Content-Type", "application/json"}, {HeaderIdempotencyKey, m.IdempotencyKey}, {HeaderTimestamp, ts},
	}}
	if s.Secret != "" {
		r.Header = append(r.Header, [2]string{HeaderSignature, "sha256=" + hex.EncodeToString(WebhookSignature(s.Secret, ts, body))})
	}
	r.Header = append(r.Header, s.Header...)
	return r, nil
}

// WebhookSignature is the MAC a webhook receiver recomputes.
func WebhookSignature(secret, timestamp string, body []byte) []byte {
	return hmacSHA256([]byte(secret), append([]byte(timestamp+"."), body...))
}

func hmacSHA256(key, msg []byte) []byte {
	h := hmac.New(sha256.New, key)
	h.Write(msg)
	return h.Sum(nil)
}

func base(s Settings, def string) string {
	if s.Server != "" {
		return strings.TrimRight(s.Server, "/")
	}
	return def
}

func join(m Message) string {
	switch {
	case m.Title == "":
		return m.Content
	case m.Content == "":
		return m.Title
	}
	return m.Title + "\n\n" + m.Content
}

// headerSafe keeps a title usable as a header value (ntfy reads UTF-8
// titles; line breaks would end the header).
func headerSafe(s string) string {
	return strings.NewReplacer("\r", " ", "\n", " ").Replace(s)
}

func jsonPost(u string, v any) (Request, error) {
	body, err := json.Marshal(v)
	if err != nil {
		return Request{}, err
	}
	return Request{Method: "POST", URL: u, Body: body, Header: [][2]string{{"Content-Type", "application/json"}}}, nil
}

func formPost(u string, v url.Values) Request {
	return Request{Method: "POST", URL: u, Body: []byte(v.Encode()),
		Header: [][2]string{{"Content-Type", "application/x-www-form-urlencoded"}}}
}
