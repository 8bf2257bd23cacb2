package logstore

import (
	"fmt"
	"io"
	"os"

	"github.com/ql3/ql3/core/canonjson"
	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/worker/executor"
)

const (
	metaVersion  = 1
	metaMaxBytes = 512
	// maxMarkerBytes bounds the marker line a truncated log also holds.
	maxMarkerBytes = executor.MaxMarkerBytes
)

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// meta is the sidecar record written when a log is closed. Power loss can
// leave it missing or torn; readers then fall back to the file size.
type meta struct {
	Version   int   `json:"v"`
	Bytes     int64 `json:"bytes"`
	BytesSeen int64 `json:"bytesSeen"`
	Truncated bool  `json:"truncated"`
}

var metaLimits = canonjson.Limits{MaxBytes: metaMaxBytes, MaxDepth: 1, MaxEntries: 8, MaxString: 16}

func encodeMeta(m meta) ([]byte, error) {
	return canonjson.Canonical(m)
}

// decodeMeta parses a sidecar strictly and checks it is self-consistent.
func decodeMeta(data []byte) (meta, error) {
	var m meta
	if err := canonjson.DecodeStrict(data, metaLimits, &m); err != nil {
		return meta{}, err
	}
	if m.Version != metaVersion {
		return meta{}, errs.Invalidf("v", "unsupported meta version %d", m.Version)
	}
	if m.Bytes < 0 || m.Bytes > HardMaxBytesPerAttempt+maxMarkerBytes {
		return meta{}, errs.Invalidf("bytes", "must be 0..%d, got %d", HardMaxBytesPerAttempt+maxMarkerBytes, m.Bytes)
	}
	// A truncated log also holds the dropped-bytes marker line.
	if slack := int64(maxMarkerBytes) * int64(boolInt(m.Truncated)); m.BytesSeen+slack < m.Bytes {
		return meta{}, errs.Invalidf("bytesSeen", "must be at least bytes (%d), got %d", m.Bytes, m.BytesSeen)
	}
	if m.BytesSeen > m.Bytes && !m.Truncated {
		return meta{}, errs.Invalidf("truncated", "must be true when bytesSeen exceeds bytes")
	}
	return m, nil
}

func writeMeta(path string, m meta) error {
	data, err := encodeMeta(m)
	if err != nil {
		return err
	}
	if err := os.WriteFile(path, data, fileMode); err != nil {
		return fmt.Errorf("write meta: %w", err)
	}
	return nil
}

// readMeta returns the sidecar if it exists and is valid.
func readMeta(path string) (meta, bool) {
	f, err := os.Open(path)
	if err != nil {
		return meta{}, false
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, metaMaxBytes+1))
	if err != nil {
		return meta{}, false
	}
	m, err := decodeMeta(data)
	return m, err == nil
}
