package httpkit

import (
	"testing"

	"github.com/ql3/ql3/core/errs"
)

func TestIdempotencyKey(t *testing.T) {
	tests := []struct {
		header, body, want, field string
	}{
		{header: "deploy-42", want: "deploy-42"},
		{body: "k", want: "k"},
		{header: "k", body: "k", want: "k"},
		{want: ""},
		{header: "a", body: "b", field: "idempotencyKey"},
		{header: "with space", field: "Idempotency-Key"},
		{body: "tab\t", field: "idempotencyKey"},
		{body: "é", field: "idempotencyKey"},
		{header: string(repeat('x', MaxIdempotencyKey)), want: string(repeat('x', MaxIdempotencyKey))},
		{header: string(repeat('x', MaxIdempotencyKey+1)), field: "Idempotency-Key"},
		{body: string(repeat('x', MaxIdempotencyKey+1)), field: "idempotencyKey"},
	}
	for _, tt := range tests {
		got, err := IdempotencyKey(tt.header, tt.body)
		if tt.field != "" {
			if err == nil || errs.Field(err) != tt.field {
				t.Errorf("IdempotencyKey(%q, %q) = %q, %v; want a refusal naming %s", tt.header, tt.body, got, err, tt.field)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("IdempotencyKey(%q, %q) = %q, %v; want %q", tt.header, tt.body, got, err, tt.want)
		}
	}
}

func repeat(b byte, n int) []byte {
	out := make([]byte, n)
	for i := range out {
		out[i] = b
	}
	return out
}

// FuzzIdempotencyKey: an accepted key is printable ASCII of bounded length
// and equals the input that carried it.
func FuzzIdempotencyKey(f *testing.F) {
	f.Add("deploy-42", "")
	f.Add("", "k")
	f.Add("a", "b")
	f.Add("with space", "")
	f.Fuzz(func(t *testing.T, header, body string) {
		key, err := IdempotencyKey(header, body)
		if err != nil {
			return
		}
		if len(key) > MaxIdempotencyKey || (key != header && key != body) {
			t.Fatalf("key %q from header %q body %q", key, header, body)
		}
		for i := 0; i < len(key); i++ {
			if key[i] < 0x21 || key[i] > 0x7e {
				t.Fatalf("accepted byte %#x", key[i])
			}
		}
	})
}
