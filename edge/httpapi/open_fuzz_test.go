package httpapi

import (
	"bytes"
	"encoding/json"
	"net/http/httptest"
	"testing"
)

// FuzzOpenCronBody sends arbitrary bodies to POST /open/crons with a good
// app token: the answer is always QingLong's envelope, 200 with code 200
// or a 4xx whose code equals the status and carries a message (never 5xx).
func FuzzOpenCronBody(f *testing.F) {
	f.Add([]byte(`{"name":"a","command":"task a.js","schedule":"0 8 * * *","labels":[]}`))
	f.Add([]byte(`{"command":"x","schedule":"@once"}`))
	f.Add([]byte(`{"command":"x","schedule":"0 8 * * *","extra_schedules":[{"schedule":"0 8 * * *"}]}`))
	f.Add([]byte(`{"command":"x","schedule":"61 * * * *","allow_multiple_instances":2}`))
	f.Add([]byte(`[1,2]`))
	fx := newFixture(f)
	id, secret := fx.newApp("fuzz", "crons")
	tok := fx.appToken(id, secret).Token
	h := fx.srv.Config.Handler
	f.Fuzz(func(t *testing.T, body []byte) {
		req := httptest.NewRequest("POST", "/open/crons", bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+tok)
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		var a struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &a); err != nil {
			t.Fatalf("%d not an envelope: %q", rec.Code, rec.Body)
		}
		switch {
		case rec.Code == 200 && a.Code == 200:
		case rec.Code >= 400 && rec.Code < 500 && a.Code == rec.Code && a.Message != "":
		default:
			t.Fatalf("status %d code %d for %q: %s", rec.Code, a.Code, body, rec.Body)
		}
	})
}
