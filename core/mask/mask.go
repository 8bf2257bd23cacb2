// Package mask replaces secret values in a stream of output with "***".
//
// A Matcher is an Aho–Corasick automaton over a set of secrets, built once
// per attempt; a Writer feeds an attempt's output through it to a sink (a
// log file, a spool) as the output arrives, in whatever chunks it arrives.
//
// What is masked: every occurrence of every secret, wherever it starts,
// including occurrences that straddle two writes. Occurrences that overlap
// (share at least one byte) become one "***"; adjacent ones stay separate.
// The result is the same whatever the chunking: the reference is Mask, the
// one-shot function over the whole text, and a differential fuzz test holds
// the Writer to it.
//
// Memory: the Writer holds back only the bytes that could still be the
// start of a secret — at most the longest secret's length minus one — and
// the bounds of an occurrence whose end is not known yet (never its bytes).
// A 1 MiB line with no newline is masked in place as it streams.
//
// The worker links this package (its log upload path masks too): standard
// library only.
package mask

import (
	"bytes"
	"io"
	"sort"
)

// Replacement is what an occurrence of a secret becomes.
const Replacement = "***"

// node is one state of the automaton: a trie node with its failure link.
// Children are kept as a first-child/next-sibling list (most trie nodes of
// real secrets have one child), the root's in a dense table.
type node struct {
	child   int32 // first child, -1 if none
	sibling int32 // next sibling, -1 if none
	fail    int32
	depth   int32 // length of the string this state spells
	match   int32 // length of the longest secret that ends here (this state or a suffix), 0 if none
	label   byte
}

// Matcher finds secrets. It is immutable after New and safe for concurrent
// use by many Writers.
type Matcher struct {
	nodes   []node
	root    [256]int32 // goto of the root state (0)
	longest int
	count   int
}

// New builds a Matcher over secrets. Empty secrets and duplicates are
// ignored; the order does not matter.
func New(secrets [][]byte) *Matcher {
	uniq := make([][]byte, 0, len(secrets))
	total := 1
	for _, s := range secrets {
		if len(s) > 0 {
			uniq = append(uniq, s)
			total += len(s)
		}
	}
	m := &Matcher{nodes: make([]node, 1, total)}
	m.nodes[0] = node{child: -1, sibling: -1}
	sort.Slice(uniq, func(i, j int) bool { return bytes.Compare(uniq[i], uniq[j]) < 0 })
	for i, s := range uniq {
		if i > 0 && bytes.Equal(s, uniq[i-1]) {
			continue
		}
		m.insert(s)
		m.count++
		m.longest = max(m.longest, len(s))
	}
	m.link()
	return m
}

// Len is the number of distinct secrets; Longest the length of the longest.
func (m *Matcher) Len() int     { return m.count }
func (m *Matcher) Longest() int { return m.longest }

func (m *Matcher) child(s int32, c byte) int32 {
	for x := m.nodes[s].child; x >= 0; x = m.nodes[x].sibling {
		if m.nodes[x].label == c {
			return x
		}
	}
	return -1
}

func (m *Matcher) insert(s []byte) {
	cur := int32(0)
	for _, c := range s {
		next := m.child(cur, c)
		if next < 0 {
			next = int32(len(m.nodes))
			m.nodes = append(m.nodes, node{child: -1, sibling: m.nodes[cur].child, label: c, depth: m.nodes[cur].depth + 1})
			m.nodes[cur].child = next
		}
		cur = next
	}
	m.nodes[cur].match = m.nodes[cur].depth
}

// link computes failure links breadth first, and with them the longest
// secret ending at each state.
func (m *Matcher) link() {
	for c := range m.root {
		m.root[c] = 0
	}
	queue := make([]int32, 0, len(m.nodes))
	for x := m.nodes[0].child; x >= 0; x = m.nodes[x].sibling {
		m.root[m.nodes[x].label] = x
		m.nodes[x].fail = 0
		queue = append(queue, x)
	}
	for len(queue) > 0 {
		s := queue[0]
		queue = queue[1:]
		for x := m.nodes[s].child; x >= 0; x = m.nodes[x].sibling {
			m.nodes[x].fail = m.step(m.nodes[s].fail, m.nodes[x].label)
			if m.nodes[x].match == 0 {
				m.nodes[x].match = m.nodes[m.nodes[x].fail].match
			}
			queue = append(queue, x)
		}
	}
}

// step is the automaton's transition from state s on byte c.
func (m *Matcher) step(s int32, c byte) int32 {
	for s != 0 {
		if next := m.child(s, c); next >= 0 {
			return next
		}
		s = m.nodes[s].fail
	}
	return m.root[c]
}

// Mask returns text with every occurrence of a secret replaced (the
// reference semantics of Writer) and the number of replacements.
func (m *Matcher) Mask(text []byte) ([]byte, int) {
	var out bytes.Buffer
	w := NewWriter(&out, m)
	_, _ = w.Write(text)
	_ = w.Close()
	return out.Bytes(), w.Count()
}

// span is an occurrence (or a union of overlapping ones) at absolute
// stream offsets [s, e).
type span struct{ s, e int64 }

// Writer masks a stream on its way to a sink. Not safe for concurrent use.
// Close (or Flush at a point where the stream is known to end) must be
// called to write the held-back tail.
type Writer struct {
	m     *Matcher
	dst   io.Writer
	state int32
	pos   int64  // bytes consumed
	cur   int64  // everything before cur is written or swallowed by a span
	held  []byte // the raw bytes [cur, pos)
	open  []span // occurrences that may still grow, in order; the first may start before cur
	out   []byte // pending output, written to dst at the end of each Write
	count int
	err   error
}

// maxPending bounds out before it is written to dst within one Write.
const maxPending = 32 << 10

// NewWriter returns a Writer that masks m's secrets on the way to dst. A
// nil or empty Matcher passes everything through unchanged.
func NewWriter(dst io.Writer, m *Matcher) *Writer {
	if m == nil {
		m = New(nil)
	}
	return &Writer{m: m, dst: dst}
}

// Count is the number of replacements written so far.
func (w *Writer) Count() int { return w.count }

// Held is the number of raw bytes held back (tests and metrics).
func (w *Writer) Held() int { return len(w.held) }

// Write consumes p. It reports len(p) unless the sink failed; the first
// sink error is returned from then on.
func (w *Writer) Write(p []byte) (int, error) {
	if w.err != nil {
		return 0, w.err
	}
	if w.m.count == 0 {
		w.pos += int64(len(p))
		w.cur = w.pos
		if _, err := w.dst.Write(p); err != nil {
			w.err = err
			return 0, err
		}
		return len(p), nil
	}
	start := w.pos
	nodes := w.m.nodes
	state := w.state
	for i, c := range p {
		state = w.m.step(state, c)
		if l := nodes[state].match; l > 0 {
			e := start + int64(i) + 1
			w.add(span{e - int64(l), e})
		}
	}
	w.state = state
	w.pos += int64(len(p))
	safe := w.pos - int64(nodes[state].depth)
	w.emit(safe, p, start)
	if err := w.drain(); err != nil {
		return 0, err
	}
	return len(p), nil
}

// add records an occurrence, merging it with the open ones it overlaps.
func (w *Writer) add(sp span) {
	for n := len(w.open); n > 0 && sp.s < w.open[n-1].e; n = len(w.open) {
		last := w.open[n-1]
		sp.s, sp.e = min(sp.s, last.s), max(sp.e, last.e)
		w.open = w.open[:n-1]
	}
	w.open = append(w.open, sp)
}

// byteRange appends the raw bytes [a, b) to out; they lie in held (from
// cur) and then in p (from pStart).
func (w *Writer) rawRange(a, b int64, p []byte, pStart int64) {
	if a >= b {
		return
	}
	heldEnd := w.cur + int64(len(w.held))
	if a < heldEnd {
		w.out = append(w.out, w.held[a-w.cur:min(b, heldEnd)-w.cur]...)
		a = min(b, heldEnd)
	}
	if a < b {
		w.out = append(w.out, p[a-pStart:b-pStart]...)
	}
	if len(w.out) >= maxPending {
		_ = w.drain()
	}
}

// emit writes everything before safe (no future occurrence can start
// before it): raw bytes, and "***" for each occurrence that ended by then.
// It then holds the raw bytes from the new cur to pos.
func (w *Writer) emit(safe int64, p []byte, pStart int64) {
	at := w.cur
	closed := 0
	for _, sp := range w.open {
		if sp.e > safe {
			break
		}
		w.rawRange(max(at, w.cur), sp.s, p, pStart)
		w.out = append(w.out, Replacement...)
		w.count++
		at = sp.e
		closed++
	}
	w.open = w.open[:copy(w.open, w.open[closed:])]
	next := max(at, safe)
	if len(w.open) > 0 {
		first := w.open[0]
		// Raw bytes before the first open occurrence that no future one can
		// reach go out; its own bytes are never needed, so the held window
		// starts after the part of it that is known.
		if first.s > at {
			w.rawRange(at, min(first.s, safe), p, pStart)
		}
		if first.s <= safe {
			next = max(safe, at, first.e)
		} else {
			next = max(at, safe)
		}
	} else {
		w.rawRange(at, safe, p, pStart)
	}
	w.hold(next, p, pStart)
}

// hold replaces held with the raw bytes [from, pos).
func (w *Writer) hold(from int64, p []byte, pStart int64) {
	var kept []byte
	heldEnd := w.cur + int64(len(w.held))
	if from < heldEnd {
		kept = append(kept, w.held[from-w.cur:]...)
		kept = append(kept, p...)
	} else {
		kept = append(kept, p[from-pStart:]...)
	}
	w.held = append(w.held[:0], kept...)
	w.cur = from
}

func (w *Writer) drain() error {
	if len(w.out) == 0 || w.err != nil {
		w.out = w.out[:0]
		return w.err
	}
	_, err := w.dst.Write(w.out)
	w.out = w.out[:0]
	if err != nil {
		w.err = err
	}
	return err
}

// Flush writes everything held back, as if the stream ended here: an
// occurrence split by a later Write will not be masked, so call it only
// where the output ends (Close does).
func (w *Writer) Flush() error {
	if w.err != nil {
		return w.err
	}
	w.emit(w.pos, nil, w.pos)
	w.state = 0
	return w.drain()
}

// Close flushes. It does not close the sink.
func (w *Writer) Close() error { return w.Flush() }
