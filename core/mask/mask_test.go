package mask

import (
	"bytes"
	"errors"
	"sort"
	"strings"
	"testing"
)

// naive is the reference: every occurrence of every secret at every
// offset, overlapping ones merged, each union replaced by one "***".
func naive(secrets [][]byte, text []byte) ([]byte, int) {
	var spans []span
	for _, s := range secrets {
		if len(s) == 0 {
			continue
		}
		for i := 0; i+len(s) <= len(text); i++ {
			if bytes.Equal(text[i:i+len(s)], s) {
				spans = append(spans, span{int64(i), int64(i + len(s))})
			}
		}
	}
	sort.Slice(spans, func(i, j int) bool { return spans[i].s < spans[j].s })
	var merged []span
	for _, sp := range spans {
		if n := len(merged); n > 0 && sp.s < merged[n-1].e {
			merged[n-1].e = max(merged[n-1].e, sp.e)
			continue
		}
		merged = append(merged, sp)
	}
	var out []byte
	at := int64(0)
	for _, sp := range merged {
		out = append(out, text[at:sp.s]...)
		out = append(out, Replacement...)
		at = sp.e
	}
	return append(out, text[at:]...), len(merged)
}

func strs(ss ...string) [][]byte {
	out := make([][]byte, len(ss))
	for i, s := range ss {
		out[i] = []byte(s)
	}
	return out
}

// feed writes text to a fresh Writer in the given chunk sizes (cycled).
func feed(t testing.TB, m *Matcher, text []byte, chunks []int) ([]byte, int) {
	t.Helper()
	var out bytes.Buffer
	w := NewWriter(&out, m)
	for i, k := 0, 0; i < len(text); k++ {
		n := len(text) - i
		if len(chunks) > 0 {
			n = min(max(chunks[k%len(chunks)], 1), n)
		}
		if got, err := w.Write(text[i : i+n]); err != nil || got != n {
			t.Fatalf("Write = %d, %v", got, err)
		}
		if w.Held() >= max(m.Longest(), 1) {
			t.Fatalf("held %d bytes, longest secret is %d", w.Held(), m.Longest())
		}
		i += n
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return out.Bytes(), w.Count()
}

func TestMask(t *testing.T) {
	cases := []struct {
		name    string
		secrets []string
		text    string
		want    string
		count   int
	}{
		{"none", nil, "hello", "hello", 0},
		{"whole", []string{"s3cr3t"}, "token=s3cr3t\n", "token=***\n", 1},
		{"twice", []string{"s3cr3t"}, "s3cr3t s3cr3t", "*** ***", 2},
		{"adjacent stay separate", []string{"abcd"}, "abcdabcd", "******", 2},
		{"self overlap merges", []string{"aaaa"}, "aaaaaa", "***", 1},
		{"overlapping secrets merge", []string{"abcd", "cdef"}, "xabcdefx", "x***x", 1},
		{"contained secret", []string{"bc", "abcd"}, "abcd bc", "*** ***", 2},
		{"longer starts earlier", []string{"xy", "zw", "axyzwb"}, "axyzwb xyzw", "*** ******", 3},
		{"prefix of a longer secret only", []string{"password1"}, "password", "password", 0},
		{"empty secret ignored", []string{""}, "abc", "abc", 0},
		{"duplicates", []string{"tok1", "tok1"}, "tok1", "***", 1},
		{"binary", []string{"\x00\xff\x01\x02"}, "a\x00\xff\x01\x02b", "a***b", 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := New(strs(tc.secrets...))
			for _, chunks := range [][]int{nil, {1}, {2}, {3, 1}, {7}} {
				got, n := feed(t, m, []byte(tc.text), chunks)
				if string(got) != tc.want || n != tc.count {
					t.Errorf("chunks %v: got %q (%d), want %q (%d)", chunks, got, n, tc.want, tc.count)
				}
			}
		})
	}
}

// TestStraddle: a secret split across two writes, at every split point.
func TestStraddle(t *testing.T) {
	secret := "ghp_0123456789abcdef"
	m := New(strs(secret))
	text := "before " + secret + " after"
	for cut := 0; cut <= len(text); cut++ {
		var out bytes.Buffer
		w := NewWriter(&out, m)
		_, _ = w.Write([]byte(text[:cut]))
		_, _ = w.Write([]byte(text[cut:]))
		_ = w.Close()
		if out.String() != "before *** after" || w.Count() != 1 {
			t.Fatalf("cut %d: %q, count %d", cut, out.String(), w.Count())
		}
	}
}

// TestMegabyteLine: a 1 MiB line with secrets inside, in 32 KiB chunks as
// the executor delivers them, held back never more than longest-1 bytes.
func TestMegabyteLine(t *testing.T) {
	secrets := strs("cookie=pt_key_abcdef123456", "token_9876543210")
	line := []byte(strings.Repeat("x", 1<<20))
	copy(line[32<<10-5:], secrets[0]) // straddles the first chunk boundary
	copy(line[500000:], secrets[1])
	copy(line[len(line)-len(secrets[1]):], secrets[1])
	line = append(line, '\n')
	m := New(secrets)
	got, n := feed(t, m, line, []int{32 << 10})
	want, wn := naive(secrets, line)
	if !bytes.Equal(got, want) || n != wn || n != 3 {
		t.Fatalf("count %d (want %d); equal %v", n, wn, bytes.Equal(got, want))
	}
	if bytes.Contains(got, secrets[0]) || bytes.Contains(got, secrets[1]) {
		t.Fatal("a secret survived")
	}
}

// TestOpenOccurrenceBounded: an occurrence that keeps growing (a repeated
// secret overlapping itself) is not held in memory.
func TestOpenOccurrenceBounded(t *testing.T) {
	m := New(strs("aaaa"))
	var out bytes.Buffer
	w := NewWriter(&out, m)
	chunk := []byte(strings.Repeat("a", 4096))
	for range 256 {
		_, _ = w.Write(chunk)
		if w.Held() >= 4 {
			t.Fatalf("held %d bytes", w.Held())
		}
	}
	_, _ = w.Write([]byte("b"))
	_ = w.Close()
	if out.String() != "***b" || w.Count() != 1 {
		t.Fatalf("%q %d", out.String(), w.Count())
	}
}

type failing struct{ n int }

func (f *failing) Write(p []byte) (int, error) {
	if f.n == 0 {
		return 0, errors.New("disk full")
	}
	f.n--
	return len(p), nil
}

func TestSinkErrorSticks(t *testing.T) {
	w := NewWriter(&failing{}, New(strs("abcd")))
	if _, err := w.Write([]byte("hello world")); err == nil {
		t.Fatal("want the sink error")
	}
	if _, err := w.Write([]byte("more")); err == nil || w.Close() == nil {
		t.Fatal("the first sink error must stick")
	}
}

func TestPassThroughWithoutSecrets(t *testing.T) {
	var out bytes.Buffer
	w := NewWriter(&out, nil)
	_, _ = w.Write([]byte("abc"))
	if out.String() != "abc" || w.Held() != 0 {
		t.Fatalf("%q", out.String())
	}
}

func FuzzWriterMatchesNaive(f *testing.F) {
	f.Add("abcd", "cdef", "xabcdefxabcdabcd", uint8(3))
	f.Add("aa", "aaa", "aaaaaaaab", uint8(1))
	f.Add("bc", "abcd", "abcd bc abc", uint8(2))
	f.Add("s3cr3t", "", "token=s3cr3t s3cr", uint8(5))
	f.Fuzz(func(t *testing.T, s1, s2, text string, chunk uint8) {
		if len(s1) > 64 || len(s2) > 64 || len(text) > 4096 {
			return
		}
		secrets := strs(s1, s2)
		want, wn := naive(secrets, []byte(text))
		got, n := feed(t, New(secrets), []byte(text), []int{int(chunk%17) + 1, int(chunk%5) + 1})
		if !bytes.Equal(got, want) || n != wn {
			t.Fatalf("secrets %q %q text %q chunk %d: got %q (%d), want %q (%d)", s1, s2, text, chunk, got, n, want, wn)
		}
	})
}

func BenchmarkWriter(b *testing.B) {
	secrets := make([][]byte, 0, 1000)
	for i := range 1000 {
		secrets = append(secrets, []byte(strings.Repeat("k", 8)+string(rune('a'+i%26))+strings.Repeat("v", 24)+string(rune('A'+i/26%26))))
	}
	m := New(secrets)
	chunk := []byte(strings.Repeat("some ordinary log output line\n", 1000))
	b.SetBytes(int64(len(chunk)))
	w := NewWriter(discard{}, m)
	for b.Loop() {
		_, _ = w.Write(chunk)
	}
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }
