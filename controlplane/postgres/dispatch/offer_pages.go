package dispatch

import (
	"context"
	"crypto/sha256"
	"slices"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/ql3/ql3/controlplane/postgres"
	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/placement/matcher"
	"github.com/ql3/ql3/core/protocol"
)

// Candidate pages of an offer pull (ADR 0009): keyset pages of limit+1
// rows, placement per candidate, claim tries.

func collectCandidates(rows pgx.Rows) ([]candidate, error) {
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (candidate, error) {
		var c candidate
		err := r.Scan(&c.runID, &c.runVersion, &c.priority, &c.createdAtMs, &c.attemptID, &c.attemptNumber,
			&c.attemptVersion, &c.revisionID, &c.revisionDigest, &c.timeoutMs)
		return c, err
	})
	if err != nil {
		return nil, postgres.Errorf(err, "postgres: read candidates")
	}
	return out, nil
}

// pageWalk walks candidate pages within the pull's bounds: pages × rows
// read, claim tries spent.
type pageWalk struct {
	d        *Dispatcher
	prepared *matcher.Prepared
	worker   string      // the session's worker id (a pinned revision places on it only)
	page     []candidate // the current page, without its limit+1 row
	eligible []candidate // the current page's eligible candidates, in claim order
	full     bool        // the current page had its limit+1 row
	pageNo   int
	tries    int                          // claim statements
	placed   map[uuid.UUID]placedRevision // every eligible revision of the pages read
}

func (w *pageWalk) first(ctx context.Context, q querier, rows []candidate) error {
	w.pageNo = 1
	return w.load(ctx, q, rows)
}

// more reports whether another page may be read.
func (w *pageWalk) more() bool { return w.full && w.pageNo < w.d.opts.PullPages }

func (w *pageWalk) next(ctx context.Context, q querier) error {
	last := w.page[len(w.page)-1]
	rows, err := q.Query(ctx, sqlCandidates, last.priority, last.createdAtMs, last.runID, int32(w.d.opts.PullPageRows+1))
	if err != nil {
		return postgres.Errorf(err, "postgres: read candidates")
	}
	page, err := collectCandidates(rows)
	if err != nil {
		return err
	}
	w.pageNo++
	return w.load(ctx, q, page)
}

// load takes one page: trims the limit+1 row and keeps the candidates whose
// pinned placement the session satisfies, a higher preferred score first
// within one priority, then FIFO (ADR 0009; the sort is stable).
func (w *pageWalk) load(ctx context.Context, q querier, page []candidate) error {
	d := w.d
	d.stats.pages.Add(1)
	w.full = len(page) > d.opts.PullPageRows
	if w.full {
		page = page[:d.opts.PullPageRows]
		d.stats.truncated.Add(1)
	}
	d.stats.candidates.Add(int64(len(page)))
	w.page, w.eligible = page, nil
	for _, c := range page {
		rev, err := d.revision(ctx, q, c.revisionID)
		if err != nil {
			return err
		}
		if !slices.Equal(rev.digest[:], c.revisionDigest) {
			return errs.E(errs.Internal, "", "run %s pins a digest its revision does not have", c.runID)
		}
		if rev.worker != "" && rev.worker != w.worker {
			d.stats.ineligible.Add(1)
			continue
		}
		if rev.match != nil {
			res := rev.match.MatchPrepared(w.prepared)
			if !res.OK {
				d.stats.ineligible.Add(1)
				continue
			}
			c.score = res.Score
		}
		w.eligible = append(w.eligible, c)
		if w.placed == nil {
			w.placed = map[uuid.UUID]placedRevision{}
		}
		w.placed[rev.id] = placedRevision{rev: rev, score: c.score}
	}
	slices.SortStableFunc(w.eligible, func(a, b candidate) int {
		if a.priority != b.priority {
			return int(b.priority) - int(a.priority)
		}
		return b.score - a.score
	})
	return nil
}

// claim runs claim statements (ADR 0031: one statement picks among the
// window's candidates) until one succeeds or the claim tries are spent:
// after a miss the first page is read afresh (and further pages while none
// of it is eligible), so revisions that appeared meanwhile are placed too.
// Nothing eligible in the pages: nothing for now.
func (w *pageWalk) claim(ctx context.Context, tx *dtx, workerID, sessionID uuid.UUID,
	req protocol.OfferPullRequest, digest [sha256.Size]byte) (*protocol.Offer, error) {
	for {
		for len(w.eligible) == 0 {
			if !w.more() {
				return nil, nil
			}
			if err := w.next(ctx, tx); err != nil {
				return nil, err
			}
		}
		w.tries++
		offer, err := w.d.claim(ctx, inTxSend(tx), sqlClaim, w.placed, workerID, sessionID, req, digest)
		if err != nil || offer != nil || w.tries >= w.d.opts.PullClaims {
			return offer, err
		}
		rows, err := tx.Query(ctx, sqlCandidates, int32(1001), int64(0), uuid.UUID{}, int32(w.d.opts.PullPageRows+1))
		if err != nil {
			return nil, postgres.Errorf(err, "postgres: read candidates")
		}
		page, err := collectCandidates(rows)
		if err != nil {
			return nil, err
		}
		if err := w.first(ctx, tx, page); err != nil {
			return nil, err
		}
	}
}
