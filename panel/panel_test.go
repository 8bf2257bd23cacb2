package panel

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/ql3/ql3/httpkit"
)

// TestUIMountsPageFilesAndPreview: the UI a server mounts registers the
// page, its files (open, with the strict CSP) and the preview (behind the
// server's credential check: not open), on the server's clock.
func TestUIMountsPageFilesAndPreview(t *testing.T) {
	mux := http.NewServeMux()
	rec := &httpkit.PatternRecorder{Mux: mux}
	now := func() time.Time { return time.Date(2026, 3, 7, 0, 0, 0, 0, time.UTC) }
	UI{}.Routes(rec, now)
	want := "GET /{$},GET /panel/app.js,GET /panel/app.css,GET " + PreviewPath
	if got := strings.Join(rec.Patterns, ","); got != want {
		t.Fatalf("patterns %s, want %s", got, want)
	}
	for _, p := range []string{"/", "/panel/app.js", "/panel/app.css"} {
		if !(UI{}).Open(p) {
			t.Errorf("%s is not open", p)
		}
		w := httptest.NewRecorder()
		mux.ServeHTTP(w, httptest.NewRequest("GET", p, nil))
		if w.Code != 200 || w.Header().Get("Content-Security-Policy") != CSP || w.Body.Len() == 0 {
			t.Errorf("GET %s = %d, CSP %q", p, w.Code, w.Header().Get("Content-Security-Policy"))
		}
	}
	if (UI{}).Open(PreviewPath) || (UI{}).Open(httpkit.SessionPath) || (UI{}).Open("/api/v1/tasks") {
		t.Error("an API path is open")
	}
	w := httptest.NewRecorder()
	mux.ServeHTTP(w, httptest.NewRequest("GET", PreviewPath+"?expression=@daily&count=1", nil))
	if w.Code != 200 || !strings.Contains(w.Body.String(), `"atMs":1772928000000`) {
		t.Fatalf("preview on the server's clock: %d %s", w.Code, w.Body)
	}
}
