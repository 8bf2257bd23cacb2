package notify

import (
	"strings"
	"testing"

	"github.com/ql3/ql3/core/notify/channel"
)

func TestTokensNameOneRun(t *testing.T) {
	a, err := NewTokens()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := NewTokens()
	tok := a.Issue("run-1")
	if id, ok := a.Verify(tok); !ok || id != "run-1" {
		t.Fatalf("Verify(own token) = %q, %v", id, ok)
	}
	mac := tok[strings.LastIndexByte(tok, '_'):]
	for _, bad := range []string{"", "ql3n_", "ql3n_run-2" + mac, strings.TrimSuffix(tok, "0") + "1", b.Issue("run-1"), "ql3c_x_y", tok + "x"} {
		if id, ok := a.Verify(bad); ok {
			t.Errorf("Verify(%q) accepted run %q", bad, id)
		}
	}
}

func FuzzTokensVerify(f *testing.F) {
	k, _ := NewTokens()
	f.Add(k.Issue("01a2-run"))
	f.Add("ql3n__")
	f.Add("ql3n_a_b_c")
	f.Fuzz(func(t *testing.T, s string) {
		id, ok := k.Verify(s)
		if ok && k.Issue(id) != s {
			t.Fatalf("accepted %q for run %q, which issues %q", s, id, k.Issue(id))
		}
	})
}

func FuzzDecodeSettings(f *testing.F) {
	f.Add(EncodeSettings(channel.Settings{Kind: channel.Webhook, Server: "https://x", Header: [][2]string{{"A", "b"}}}))
	f.Add([]byte(`{"kind":"email","to":["a@b"]}`))
	f.Add([]byte(`{`))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := DecodeSettings(b)
		if err != nil {
			return
		}
		again, err := DecodeSettings(EncodeSettings(s))
		if err != nil || again.Kind != s.Kind || again.Token != s.Token || len(again.Header) != len(s.Header) {
			t.Fatalf("round trip of %q: %+v vs %+v (%v)", b, again, s, err)
		}
	})
}

func TestPublicViewHasNoCredential(t *testing.T) {
	p := Public(channel.Settings{Kind: channel.Webhook, Server: "https://user:pw@hooks.example/path/SECRET?k=SECRET2",
		Secret: "s", Proxy: "http://u:p@proxy:3128", Header: [][2]string{{"X-Key", "SECRET3"}}})
	if p.Server != "https://hooks.example" || p.Proxy != "http://proxy:3128" || strings.Join(p.SecretsSet, ",") != "secret,server" ||
		p.HeaderNames[0] != "X-Key" {
		t.Fatalf("%+v", p)
	}
}

func TestCheckSettingsRefusesProxiesItCannotUse(t *testing.T) {
	for _, tc := range []struct {
		s    channel.Settings
		want string
	}{
		{channel.Settings{Kind: channel.Telegram, Token: "t", ChatID: "1", Proxy: "socks5://127.0.0.1:1080"}, "socks5 proxies are not supported"},
		{channel.Settings{Kind: channel.Email, SMTPHost: "h", SMTPPort: 25, From: "a@b", To: []string{"c@d"}, Proxy: "http://p:1"}, "a proxy is not supported"},
		{channel.Settings{Kind: channel.Telegram, ChatID: "1"}, "settings.token"},
	} {
		err := CheckSettings(tc.s)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.s, err, tc.want)
		}
	}
	if err := CheckSettings(channel.Settings{Kind: channel.Telegram, Token: "t", ChatID: "1", Proxy: "http://proxy:3128"}); err != nil {
		t.Errorf("an http proxy: %v", err)
	}
}
