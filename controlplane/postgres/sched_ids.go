package postgres

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"

	"github.com/google/uuid"

	"github.com/ql3/ql3/core/errs"
)

// laneRunID returns the id of a Run the cluster scheduler admits for the
// replica owner at database time atMs: a UUIDv8 (RFC 9562) laid out as
//
//	bytes 0–1   the replica's lane: the first 16 bits of SHA-256(owner)
//	bytes 2–5   atMs in whole seconds (big-endian, until 2106)
//	bytes 6–15  random, with the version (8) and variant bits set
//
// Why not UUIDv7 (issue 16, ADR 0006): every admission's foreign-key checks
// (attempts → runs, run_events → runs, run_events → attempts by run id)
// look up the Runs it just inserted, and under SERIALIZABLE an index lookup
// predicate-locks the whole B-tree leaf page. With time-ordered ids every
// concurrent admission inserts into and reads the same rightmost page of
// runs_pkey (and of attempts' (run_id, attempt) index), so any three
// overlapping admissions could form the dangerous structure SSI refuses
// ("canceled on identification as a pivot", 2–4 failures per 10,000 Runs
// at 3–4 replicas). Prefixed by a lane per replica, each replica's Runs
// append to their own part of those indexes (time-ordered within it, so
// inserts stay append-mostly): concurrent admissions of different replicas
// no longer share a page. Two replicas whose owners hash to the same lane
// (1 in 65,536) merely conflict as before; nothing else depends on the
// layout (ids are opaque; lists order by created time).
func laneRunID(owner string, atMs int64) (uuid.UUID, error) {
	var id uuid.UUID
	h := sha256.Sum256([]byte(owner))
	id[0], id[1] = h[0], h[1]
	binary.BigEndian.PutUint32(id[2:6], uint32(max(atMs, 0)/1000))
	if _, err := rand.Read(id[6:]); err != nil {
		return uuid.UUID{}, errs.E(errs.Internal, "", "generate run id: %v", err)
	}
	id[6] = 0x80 | id[6]&0x0f // version 8
	id[8] = 0x80 | id[8]&0x3f // RFC 9562 variant
	return id, nil
}
