package protocol

import (
	"encoding/base64"

	"github.com/ql3/ql3/core/errs"
)

// LogStream names one output stream of an attempt.
type LogStream string

// The two streams.
const (
	Stdout LogStream = "stdout"
	Stderr LogStream = "stderr"
)

// LogChunk carries bytes of one stream at a byte offset (PathLeaseLog).
// Chunks are resumable and idempotent: the authority stores a stream as
// one append-only file and answers with the next offset it expects; a
// chunk that starts before that offset is accepted for its new suffix
// only, a chunk that starts after it is a conflict (a gap). Data is raw
// process output in standard base64 on the wire, at most MaxLogChunkBytes
// decoded, so the body stays under the 64 KiB hard limit.
type LogChunk struct {
	V int `json:"v"`
	LeaseRef
	Stream LogStream `json:"stream"`
	Offset int64     `json:"offset"`
	Data   []byte    `json:"data,omitempty"`
	EOF    bool      `json:"eof,omitempty"` // the stream ended at Offset+len(Data)
}

type logChunkWire struct {
	V int `json:"v"`
	LeaseRef
	Stream LogStream `json:"stream"`
	Offset int64     `json:"offset"`
	Data   string    `json:"data"`
	EOF    bool      `json:"eof"`
}

var dataEncoding = base64.StdEncoding.Strict()

var logChunkLimits = limits(HardBodyBytes, 1, 32, (MaxLogChunkBytes+2)/3*4)

// DecodeLogChunk strictly decodes and validates a LogChunk.
func DecodeLogChunk(data []byte) (LogChunk, error) {
	var w logChunkWire
	if err := decode(data, logChunkLimits, &w, &w.V); err != nil {
		return LogChunk{}, err
	}
	c := LogChunk{V: w.V, LeaseRef: w.LeaseRef, Stream: w.Stream, Offset: w.Offset, EOF: w.EOF}
	if w.Data != "" {
		raw, err := dataEncoding.DecodeString(w.Data)
		// The decoder skips \r and \n; the re-encode check keeps one text
		// per chunk, as the error says.
		if err != nil || dataEncoding.EncodeToString(raw) != w.Data {
			return LogChunk{}, errs.Invalidf("data", "must be canonical standard base64")
		}
		c.Data = raw
	}
	if err := c.Validate(); err != nil {
		return LogChunk{}, err
	}
	return c, nil
}

// Validate checks every field: the chunk is not empty unless it only
// marks the end of the stream, and it ends within MaxLogBytes.
func (c LogChunk) Validate() error {
	if err := checkVersion(c.V); err != nil {
		return err
	}
	if err := c.LeaseRef.Validate(); err != nil {
		return err
	}
	if c.Stream != Stdout && c.Stream != Stderr {
		return errs.Invalidf("stream", "must be stdout or stderr")
	}
	if len(c.Data) > MaxLogChunkBytes {
		return errs.TooLargef("data", "is %d bytes, limit is %d", len(c.Data), MaxLogChunkBytes)
	}
	if len(c.Data) == 0 && !c.EOF {
		return errs.Invalidf("data", "is empty and eof is not set")
	}
	if err := checkRange("offset", c.Offset, 0, MaxLogBytes); err != nil {
		return err
	}
	if c.Offset+int64(len(c.Data)) > MaxLogBytes {
		return errs.TooLargef("data", "ends at byte %d, the log limit is %d", c.Offset+int64(len(c.Data)), int64(MaxLogBytes))
	}
	return nil
}

// End returns the offset just past this chunk.
func (c LogChunk) End() int64 { return c.Offset + int64(len(c.Data)) }

// Encode validates c (with v set) and returns its JSON.
func (c LogChunk) Encode() ([]byte, error) {
	c.V = Version
	if len(c.Data) == 0 {
		c.Data = nil
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return encode(c, HardBodyBytes, "log chunk")
}

// LogReceipt answers a LogChunk: NextOffset is the length of the stream the
// authority has stored, where the worker continues. Closed reports that an
// eof was recorded; nothing may be appended after it.
type LogReceipt struct {
	V          int       `json:"v"`
	AttemptID  string    `json:"attemptId"`
	Stream     LogStream `json:"stream"`
	NextOffset int64     `json:"nextOffset"`
	Closed     bool      `json:"closed,omitempty"`
}

// DecodeLogReceipt strictly decodes and validates a LogReceipt.
func DecodeLogReceipt(data []byte) (LogReceipt, error) {
	var r LogReceipt
	if err := decode(data, flat, &r, &r.V); err != nil {
		return LogReceipt{}, err
	}
	if err := r.Validate(); err != nil {
		return LogReceipt{}, err
	}
	return r, nil
}

// Validate checks every field.
func (r LogReceipt) Validate() error {
	if err := checkVersion(r.V); err != nil {
		return err
	}
	if err := checkID("attemptId", r.AttemptID); err != nil {
		return err
	}
	if r.Stream != Stdout && r.Stream != Stderr {
		return errs.Invalidf("stream", "must be stdout or stderr")
	}
	return checkRange("nextOffset", r.NextOffset, 0, MaxLogBytes)
}

// Encode validates r (with v set) and returns its JSON.
func (r LogReceipt) Encode() ([]byte, error) {
	r.V = Version
	if err := r.Validate(); err != nil {
		return nil, err
	}
	return encode(r, DefaultBodyBytes, "log receipt")
}
