package metrics

import (
	"bytes"
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"
)

func TestWriterFormat(t *testing.T) {
	var b bytes.Buffer
	w := NewWriter(&b)
	w.Counter("a_total", "line one\nback\\slash", []Label{{"k", `q"u\o` + "\n"}}, 3)
	w.Family("a_total", "counter", "ignored: the family is begun")
	w.Sample("a_total", []Label{{"k", "b"}}, 1.5)
	w.Gauge("g", "a gauge", nil, math.Inf(1))
	h := NewHistogram([]float64{0.1, 1})
	for _, v := range []float64{0.05, 0.1, 0.5, 7} {
		h.Observe(v)
	}
	h.Write(w, "h_seconds", "a histogram", []Label{{"route", "/x"}})
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	want := `# HELP a_total line one\nback\\slash
# TYPE a_total counter
a_total{k="q\"u\\o\n"} 3
a_total{k="b"} 1.5
# HELP g a gauge
# TYPE g gauge
g +Inf
# HELP h_seconds a histogram
# TYPE h_seconds histogram
h_seconds_bucket{route="/x",le="0.1"} 2
h_seconds_bucket{route="/x",le="1"} 3
h_seconds_bucket{route="/x",le="+Inf"} 4
h_seconds_sum{route="/x"} 7.65
h_seconds_count{route="/x"} 4
`
	if got := b.String(); got != want {
		t.Errorf("exposition:\n%s\nwant:\n%s", got, want)
	}
}

func TestFormatValue(t *testing.T) {
	for _, c := range []struct {
		v    float64
		want string
	}{{0, "0"}, {3, "3"}, {0.25, "0.25"}, {1e21, "1e+21"}, {math.Inf(-1), "-Inf"}, {math.NaN(), "NaN"}} {
		if got := FormatValue(c.v); got != c.want {
			t.Errorf("FormatValue(%v) = %q, want %q", c.v, got, c.want)
		}
	}
}

func TestRoute(t *testing.T) {
	for in, want := range map[string]string{
		"":                          "unmatched",
		"GET /api/v1/tasks/{task}":  "/api/v1/tasks/{task}",
		"/api/":                     "/api/",
		"POST /api/v1/runs/{run}/x": "/api/v1/runs/{run}/x",
	} {
		if got := Route(in); got != want {
			t.Errorf("Route(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestHTTPStats(t *testing.T) {
	s := NewHTTPStats()
	s.Observe("/b", "GET", 200, 2*time.Millisecond)
	s.Observe("/a", "BREW", 418, time.Second)
	s.Observe("/b", "GET", 200, 3*time.Millisecond)
	var b bytes.Buffer
	w := NewWriter(&b)
	s.Write(w)
	_ = w.Flush()
	out := b.String()
	for _, want := range []string{
		`ql3_http_requests_total{route="/a",method="other",code="418"} 1`,
		`ql3_http_requests_total{route="/b",method="GET",code="200"} 2`,
		`ql3_http_request_duration_seconds_bucket{route="/b",le="0.0025"} 1`,
		`ql3_http_request_duration_seconds_count{route="/b"} 2`,
	} {
		if !strings.Contains(out, want+"\n") {
			t.Errorf("lacks %q:\n%s", want, out)
		}
	}
	if strings.Index(out, `route="/a"`) > strings.Index(out, `route="/b"`) {
		t.Error("series are not sorted by route")
	}
}

// FuzzLabelEscaping checks that any label value stays on one line inside
// its quotes: a scraper must never see a broken or injected sample.
func FuzzLabelEscaping(f *testing.F) {
	f.Add("plain")
	f.Add("a\"b\\c\nd")
	f.Fuzz(func(t *testing.T, v string) {
		var b bytes.Buffer
		w := NewWriter(&b)
		w.Gauge("x", "h", []Label{{"l", v}}, 1)
		_ = w.Flush()
		lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
		if len(lines) != 3 {
			t.Fatalf("%d lines for %q", len(lines), v)
		}
		sample := lines[2]
		if !strings.HasPrefix(sample, `x{l="`) || !strings.HasSuffix(sample, `"} 1`) {
			t.Fatalf("sample %q", sample)
		}
		inner := strings.TrimSuffix(strings.TrimPrefix(sample, `x{l="`), `"} 1`)
		for i := 0; i < len(inner); i++ {
			if inner[i] == '"' && (i == 0 || inner[i-1] != '\\') {
				t.Fatalf("unescaped quote in %q", inner)
			}
		}
	})
}

func TestRender(t *testing.T) {
	gauge := func(name string) func(*Writer) {
		return func(w *Writer) { w.Gauge(name, "h", nil, 1) }
	}
	failing := Collector(func(context.Context, *Writer) error { return errors.New("store down") })
	tests := []struct {
		name    string
		collect Collector
		also    []func(*Writer)
		want    string
		wantErr bool
	}{
		{name: "nothing", want: ""},
		{name: "collector then the rest in order", collect: func(_ context.Context, w *Writer) error { gauge("a")(w); return nil },
			also: []func(*Writer){gauge("b"), gauge("c")},
			want: "# HELP a h\n# TYPE a gauge\na 1\n# HELP b h\n# TYPE b gauge\nb 1\n# HELP c h\n# TYPE c gauge\nc 1\n"},
		{name: "a failed collector serves nothing", collect: failing, also: []func(*Writer){gauge("b")}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Render(context.Background(), tt.collect, tt.also...)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want error %v", err, tt.wantErr)
			}
			if string(got) != tt.want {
				t.Fatalf("got %q, want %q", got, tt.want)
			}
		})
	}
}
