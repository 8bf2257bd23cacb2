package protocol

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/ql3/ql3/core/errs"
)

// Every decoder has a fuzz target. The property: no panic; a refusal is a
// coded error (never errs.Internal); an accepted body re-encodes, and the
// re-encoding decodes to the same value (decode ∘ encode is the identity
// on everything a decoder accepts).
func fuzzCodec(f *testing.F, name string) {
	var c codec
	for _, k := range codecs() {
		if k.name == name {
			c = k
		}
	}
	if c.decode == nil {
		f.Fatalf("no codec %s", name)
	}
	for _, seed := range seeds(f, c) {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := c.decode(data)
		if err != nil {
			if errs.Code(err) == errs.Internal {
				t.Fatalf("uncoded error: %v", err)
			}
			return
		}
		raw, err := v.Encode()
		if err != nil {
			t.Fatalf("accepted body does not re-encode: %v", err)
		}
		back, err := c.decode(raw)
		if err != nil {
			t.Fatalf("re-encoded body refused: %v\n%s", err, raw)
		}
		if !reflect.DeepEqual(back, v) {
			t.Fatalf("decode∘encode changed the value:\n%#v\n%#v", back, v)
		}
	})
}

// seeds returns the example body and a few near misses for codec c.
func seeds(t testing.TB, c codec) [][]byte {
	raw, err := c.example(t).Encode()
	if err != nil {
		t.Fatal(err)
	}
	s := string(raw)
	return [][]byte{
		raw,
		[]byte(strings.Replace(s, `"v":1`, `"v":2`, 1)),
		[]byte(strings.Replace(s, `{"v":1,`, `{"v":1,"V":1,`, 1)),
		[]byte(s[:len(s)/2]),
		[]byte(`{"v":1}`),
	}
}

func FuzzDecodeSessionOpen(f *testing.F)       { fuzzCodec(f, "SessionOpen") }
func FuzzDecodeSessionHeartbeat(f *testing.F)  { fuzzCodec(f, "SessionHeartbeat") }
func FuzzDecodeSessionTransition(f *testing.F) { fuzzCodec(f, "SessionTransition") }
func FuzzDecodeSessionState(f *testing.F)      { fuzzCodec(f, "SessionState") }
func FuzzDecodeOfferPullRequest(f *testing.F)  { fuzzCodec(f, "OfferPullRequest") }
func FuzzDecodeOffer(f *testing.F)             { fuzzCodec(f, "Offer") }
func FuzzDecodeAck(f *testing.F)               { fuzzCodec(f, "Ack") }
func FuzzDecodeLeaseControl(f *testing.F)      { fuzzCodec(f, "LeaseControl") }
func FuzzDecodeLogChunk(f *testing.F)          { fuzzCodec(f, "LogChunk") }
func FuzzDecodeLogReceipt(f *testing.F)        { fuzzCodec(f, "LogReceipt") }
func FuzzDecodeCompletion(f *testing.F)        { fuzzCodec(f, "Completion") }
func FuzzDecodeCompletionReceipt(f *testing.F) { fuzzCodec(f, "CompletionReceipt") }

var updateCorpus = flag.Bool("update-corpus", false, "rewrite testdata/fuzz seed files from the examples")

// TestSeedCorpus checks that every fuzz target has a committed seed corpus
// whose first file is the valid example body, so `go test` (without -fuzz)
// replays it and a fresh clone fuzzes from a meaningful start.
// go test ./protocol -run TestSeedCorpus -update-corpus rewrites them.
func TestSeedCorpus(t *testing.T) {
	for _, c := range codecs() {
		dir := filepath.Join("testdata", "fuzz", "FuzzDecode"+c.name)
		if *updateCorpus {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			for i, seed := range seeds(t, c) {
				file := filepath.Join(dir, fmt.Sprintf("seed-%02d", i))
				content := "go test fuzz v1\n[]byte(" + strconv.Quote(string(seed)) + ")\n"
				if err := os.WriteFile(file, []byte(content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
		}
		content, err := os.ReadFile(filepath.Join(dir, "seed-00"))
		if err != nil {
			t.Errorf("%s: seed corpus missing: %v", c.name, err)
			continue
		}
		header, value, ok := strings.Cut(strings.TrimSpace(string(content)), "\n")
		if !ok || header != "go test fuzz v1" || !strings.HasPrefix(value, "[]byte(") || !strings.HasSuffix(value, ")") {
			t.Errorf("%s: seed-00 is not in go test fuzz v1 format", c.name)
			continue
		}
		body, err := strconv.Unquote(strings.TrimSuffix(strings.TrimPrefix(value, "[]byte("), ")"))
		if err != nil {
			t.Errorf("%s: seed-00 value: %v", c.name, err)
			continue
		}
		if _, err := c.decode([]byte(body)); err != nil {
			t.Errorf("%s: committed example no longer decodes: %v", c.name, err)
		}
	}
}
