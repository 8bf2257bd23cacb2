package envstore

import (
	"context"
	"encoding/base64"
	"errors"
	"strconv"
	"strings"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/ql3/ql3/controlplane"
	"github.com/ql3/ql3/controlplane/postgres"
	"github.com/ql3/ql3/controlplane/postgres/publication"
	"github.com/ql3/ql3/core/env"
	"github.com/ql3/ql3/core/envseal"
	"github.com/ql3/ql3/core/errs"
)

// MaxQueryBytes bounds the search text of ListEnvs.
const MaxQueryBytes = 128

const (
	columns = `entry_id::text, name, value_ct, value_bytes, remarks, enabled, position, pinned, labels, created_at_ms, updated_at_ms`
	order   = ` ORDER BY pinned DESC, position DESC, created_at_ms, entry_id`
)

// row is an entry as stored: the value sealed.
type row struct {
	env.Entry
	ciphertext []byte
	valueBytes int
}

func scan(sc pgx.Row) (row, error) {
	var r row
	if err := sc.Scan(&r.ID, &r.Name, &r.ciphertext, &r.valueBytes, &r.Remarks, &r.Enabled, &r.Position, &r.Pinned,
		&r.Labels, &r.CreatedAtMs, &r.UpdatedAtMs); err != nil {
		return row{}, err
	}
	if len(r.Labels) == 0 {
		r.Labels = nil
	}
	return r, nil
}

func labels(l []string) []string {
	if l == nil {
		return []string{}
	}
	return l
}

// projectUUID parses a project id; anything else is not found.
func projectUUID(projectID string) (uuid.UUID, error) {
	id, err := uuid.Parse(projectID)
	if err != nil {
		return uuid.UUID{}, errs.NotFoundf("project %.64q not found", projectID)
	}
	return id, nil
}

// checkProject makes sure the project exists (in tx).
func checkProject(ctx context.Context, q postgres.DB, projectID string) (uuid.UUID, error) {
	pid, err := projectUUID(projectID)
	if err != nil {
		return pid, err
	}
	var ok bool
	if err := q.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM ql3.projects WHERE project_id = $1)`, pid).Scan(&ok); err != nil {
		return pid, err
	}
	if !ok {
		return pid, errs.NotFoundf("project %s not found", projectID)
	}
	return pid, nil
}

func load(ctx context.Context, q postgres.DB, pid uuid.UUID, id string) (row, error) {
	eid, err := uuid.Parse(id)
	if err != nil {
		return row{}, errs.NotFoundf("env entry %.64q not found", id)
	}
	r, err := scan(q.QueryRow(ctx, `SELECT `+columns+` FROM ql3.env_entries WHERE project_id = $1 AND entry_id = $2`, pid, eid))
	if errors.Is(err, pgx.ErrNoRows) {
		return row{}, errs.NotFoundf("env entry %s not found", id)
	}
	return r, err
}

// enabledSizes reads what env.CheckSizes needs of the project, leaving out
// except.
func enabledSizes(ctx context.Context, q postgres.DB, pid uuid.UUID, except string) ([]env.Size, error) {
	rows, err := q.Query(ctx, `SELECT entry_id::text, name, value_bytes FROM ql3.env_entries WHERE project_id = $1 AND enabled`, pid)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []env.Size
	for rows.Next() {
		var (
			id string
			sz env.Size
		)
		if err := rows.Scan(&id, &sz.Name, &sz.ValueBytes); err != nil {
			return nil, err
		}
		if id != except {
			out = append(out, sz)
		}
	}
	return out, rows.Err()
}

func newEntryID() (string, error) {
	id, err := controlplane.NewID()
	return id.String(), err
}

// CreateEnvs implements controlplane.EnvStore: all entries in one
// transaction, or none. With more than one entry, errors name it
// ("entries[2].value").
func (s *Store) CreateEnvs(ctx context.Context, projectID string, in []controlplane.EnvInput) ([]env.Entry, error) {
	c, err := s.Cipher()
	if err != nil {
		return nil, err
	}
	if err := checkInputs(in); err != nil {
		return nil, err
	}
	var out []env.Entry
	err = s.inTx(ctx, func(ctx context.Context, tx pgx.Tx) error {
		var cerr error
		out, cerr = createEnvsTx(ctx, tx, c, projectID, in)
		return cerr
	})
	return out, err
}

// CreateEnvsTx is CreateEnvs inside the caller's transaction (the cluster
// import, ADR 0063): the same checks, positions, sealing and audit line.
// c is the store's Cipher.
func CreateEnvsTx(ctx context.Context, tx pgx.Tx, c *envseal.Cipher, projectID string, in []controlplane.EnvInput) ([]env.Entry, error) {
	if err := checkInputs(in); err != nil {
		return nil, err
	}
	return createEnvsTx(ctx, tx, c, projectID, in)
}

func checkInputs(in []controlplane.EnvInput) error {
	if len(in) == 0 {
		return errs.Invalidf("entries", "at least one entry is required")
	}
	if len(in) > env.MaxEntries {
		return errs.Invalidf("entries", "has %d entries, a project's env store holds at most %d", len(in), env.MaxEntries)
	}
	for i, e := range in {
		if err := (env.Entry{Name: e.Name, Value: e.Value, Remarks: e.Remarks, Labels: e.Labels}).Validate(); err != nil {
			if len(in) == 1 {
				return err
			}
			return errs.Prefix("entries["+strconv.Itoa(i)+"]", err)
		}
	}
	return nil
}

func createEnvsTx(ctx context.Context, tx pgx.Tx, c *envseal.Cipher, projectID string, in []controlplane.EnvInput) ([]env.Entry, error) {
	out := make([]env.Entry, 0, len(in))
	pid, err := checkProject(ctx, tx, projectID)
	if err != nil {
		return nil, err
	}
	var (
		count  int
		lowest int64
		now    int64
	)
	if err := tx.QueryRow(ctx, `SELECT count(*), coalesce(min(position), 0), `+postgres.DBNowMs+` FROM ql3.env_entries WHERE project_id = $1`, pid).
		Scan(&count, &lowest, &now); err != nil {
		return nil, err
	}
	if count+len(in) > env.MaxEntries {
		return nil, errs.Invalidf("entries", "a project's env store holds at most %d entries; it has %d, adding %d would exceed the limit", env.MaxEntries, count, len(in))
	}
	sizes, err := enabledSizes(ctx, tx, pid, "")
	if err != nil {
		return nil, err
	}
	for _, e := range in {
		if e.Enabled {
			sizes = append(sizes, env.Size{Name: e.Name, ValueBytes: len(e.Value)})
		}
	}
	if err := env.CheckSizes(sizes); err != nil {
		return nil, err
	}
	positions := env.NextPositions(lowest, len(in))
	b := &pgx.Batch{}
	names := make([]string, 0, len(in))
	for i, e := range in {
		id, err := newEntryID()
		if err != nil {
			return nil, err
		}
		b.Queue(`INSERT INTO ql3.env_entries (entry_id, project_id, name, value_ct, value_bytes, remarks, enabled, pinned, position, labels, created_at_ms, updated_at_ms)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $11)`,
			id, pid, e.Name, c.Seal(id, e.Name, e.Value), len(e.Value), e.Remarks, e.Enabled, e.Pinned, positions[i], labels(e.Labels), now)
		out = append(out, env.Entry{ID: id, Name: e.Name, Remarks: e.Remarks, Enabled: e.Enabled, Position: positions[i], Pinned: e.Pinned,
			Labels: e.Labels, CreatedAtMs: now, UpdatedAtMs: now})
		if len(names) < 32 {
			names = append(names, e.Name)
		}
	}
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return nil, err
	}
	subject := out[0].ID
	if len(out) > 1 {
		subject = ""
	}
	return out, publication.InsertAudit(ctx, tx, controlplane.AuditEnvCreate, "env_entry", subject,
		map[string]any{"projectId": projectID, "count": len(out), "names": strings.Join(names, ",")})
}

// UpdateEnv implements controlplane.EnvStore.
func (s *Store) UpdateEnv(ctx context.Context, projectID, id string, p controlplane.EnvPatch) (env.Entry, error) {
	c, err := s.Cipher()
	if err != nil {
		return env.Entry{}, err
	}
	changed, err := checkPatch(p)
	if err != nil {
		return env.Entry{}, err
	}
	var out env.Entry
	err = s.inTx(ctx, func(ctx context.Context, tx pgx.Tx) error {
		pid, err := checkProject(ctx, tx, projectID)
		if err != nil {
			return err
		}
		r, err := load(ctx, tx, pid, id)
		if err != nil {
			return err
		}
		blob, size, name := r.ciphertext, r.valueBytes, r.Name
		if p.Name != nil {
			name = *p.Name
		}
		switch {
		case p.Value != nil:
			blob, size = c.Seal(r.ID, name, *p.Value), len(*p.Value)
		case name != r.Name: // the ciphertext is bound to the name: re-seal
			v, err := c.Open(r.ID, r.Name, r.ciphertext)
			if err != nil {
				return errs.E(errs.Internal, "", "%v", err)
			}
			blob = c.Seal(r.ID, name, v)
		}
		e := r.Entry
		e.Name = name
		if p.Remarks != nil {
			e.Remarks = *p.Remarks
		}
		if p.Enabled != nil {
			e.Enabled = *p.Enabled
		}
		if p.Pinned != nil {
			e.Pinned = *p.Pinned
		}
		if p.Labels != nil {
			e.Labels = *p.Labels
		}
		if e.Enabled {
			sizes, err := enabledSizes(ctx, tx, pid, r.ID)
			if err != nil {
				return err
			}
			if err := env.CheckSizes(append(sizes, env.Size{Name: name, ValueBytes: size})); err != nil {
				return err
			}
		}
		if err := tx.QueryRow(ctx, `UPDATE ql3.env_entries SET name = $3, value_ct = $4, value_bytes = $5, remarks = $6, enabled = $7,
			pinned = $8, labels = $9, updated_at_ms = greatest(`+postgres.DBNowMs+`, created_at_ms)
			WHERE project_id = $1 AND entry_id = $2::uuid RETURNING updated_at_ms`,
			pid, r.ID, name, blob, size, e.Remarks, e.Enabled, e.Pinned, labels(e.Labels)).Scan(&e.UpdatedAtMs); err != nil {
			return err
		}
		out = e
		return publication.InsertAudit(ctx, tx, controlplane.AuditEnvUpdate, "env_entry", r.ID,
			map[string]any{"projectId": projectID, "name": name, "changed": strings.Join(changed, ",")})
	})
	return out, err
}

// checkPatch validates the fields a patch sets and names them.
func checkPatch(p controlplane.EnvPatch) ([]string, error) {
	var changed []string
	for _, f := range []struct {
		name  string
		set   bool
		check func() error
	}{
		{"name", p.Name != nil, func() error { return env.ValidateName(*p.Name) }},
		{"value", p.Value != nil, func() error { return env.ValidateValue(*p.Value) }},
		{"remarks", p.Remarks != nil, func() error { return env.ValidateRemarks(*p.Remarks) }},
		{"labels", p.Labels != nil, func() error { return env.ValidateLabels(*p.Labels) }},
		{"enabled", p.Enabled != nil, nil},
		{"pinned", p.Pinned != nil, nil},
	} {
		if !f.set {
			continue
		}
		if f.check != nil {
			if err := f.check(); err != nil {
				return nil, err
			}
		}
		changed = append(changed, f.name)
	}
	if len(changed) == 0 {
		return nil, errs.Invalidf("", "nothing to change: give at least one of name, value, remarks, enabled, pinned, labels")
	}
	return changed, nil
}

// DeleteEnvs implements controlplane.EnvStore. Unknown ids are not an
// error; the count says how many existed.
func (s *Store) DeleteEnvs(ctx context.Context, projectID string, ids []string) (int, error) {
	if len(ids) == 0 || len(ids) > env.MaxEntries {
		return 0, errs.Invalidf("ids", "must name 1..%d entries, got %d", env.MaxEntries, len(ids))
	}
	uids := make([]uuid.UUID, 0, len(ids))
	for _, id := range ids {
		if u, err := uuid.Parse(id); err == nil {
			uids = append(uids, u)
		}
	}
	deleted := 0
	err := s.inTx(ctx, func(ctx context.Context, tx pgx.Tx) error {
		pid, err := checkProject(ctx, tx, projectID)
		if err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `DELETE FROM ql3.env_entries WHERE project_id = $1 AND entry_id = ANY($2)`, pid, uids)
		if err != nil {
			return err
		}
		deleted = int(tag.RowsAffected())
		subject := ids[0]
		if len(ids) > 1 {
			subject = ""
		}
		return publication.InsertAudit(ctx, tx, controlplane.AuditEnvDelete, "env_entry", subject,
			map[string]any{"projectId": projectID, "deleted": deleted})
	})
	return deleted, err
}

// MoveEnv implements controlplane.EnvStore.
func (s *Store) MoveEnv(ctx context.Context, projectID, id, before string) (env.Entry, error) {
	var out env.Entry
	err := s.inTx(ctx, func(ctx context.Context, tx pgx.Tx) error {
		pid, err := checkProject(ctx, tx, projectID)
		if err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `SELECT entry_id::text, pinned, position, created_at_ms FROM ql3.env_entries WHERE project_id = $1`, pid)
		if err != nil {
			return err
		}
		slots, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (env.Slot, error) {
			var sl env.Slot
			return sl, r.Scan(&sl.ID, &sl.Pinned, &sl.Position, &sl.CreatedAtMs)
		})
		if err != nil {
			return err
		}
		moves, err := env.MoveBefore(slots, id, before)
		if err != nil {
			return err
		}
		for mid, pos := range moves {
			if _, err := tx.Exec(ctx, `UPDATE ql3.env_entries SET position = $3,
				updated_at_ms = CASE WHEN entry_id = $4::uuid THEN greatest(`+postgres.DBNowMs+`, created_at_ms) ELSE updated_at_ms END
				WHERE project_id = $1 AND entry_id = $2::uuid`, pid, mid, pos, id); err != nil {
				return err
			}
		}
		r, err := load(ctx, tx, pid, id)
		out = r.Entry
		if err != nil {
			return err
		}
		return publication.InsertAudit(ctx, tx, controlplane.AuditEnvMove, "env_entry", id, map[string]any{"projectId": projectID, "before": before})
	})
	return out, err
}

// GetEnv implements controlplane.EnvStore.
func (s *Store) GetEnv(ctx context.Context, projectID, id string) (env.Entry, error) {
	pid, err := checkProject(ctx, s.db, projectID)
	if err != nil {
		return env.Entry{}, postgres.Translate(err)
	}
	r, err := load(ctx, s.db, pid, id)
	return r.Entry, translate(err)
}

// translate passes coded errors through and translates driver errors.
func translate(err error) error {
	var coded *errs.Error
	if err == nil || errors.As(err, &coded) {
		return err
	}
	return postgres.Translate(err)
}

// encodeCursor is an offset into the filtered list: base64url("e1:<n>").
func encodeCursor(n int) string {
	return base64.RawURLEncoding.EncodeToString([]byte("e1:" + strconv.Itoa(n)))
}

func decodeCursor(s string) (int, error) {
	if s == "" {
		return 0, nil
	}
	raw, err := base64.RawURLEncoding.Strict().DecodeString(s)
	if err != nil || len(s) > 32 {
		return 0, errs.Invalidf("cursor", "is not a cursor returned by this server")
	}
	num, ok := strings.CutPrefix(string(raw), "e1:")
	n, err := strconv.Atoi(num)
	if !ok || err != nil || n < 0 || n > env.MaxEntries || strconv.Itoa(n) != num {
		return 0, errs.Invalidf("cursor", "is not a cursor returned by this server")
	}
	return n, nil
}

func likePattern(q string) string {
	r := strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)
	return "%" + r.Replace(q) + "%"
}

// ListEnvs implements controlplane.EnvStore. Entries carry no values.
func (s *Store) ListEnvs(ctx context.Context, projectID string, f controlplane.EnvFilter) (controlplane.EnvPage, error) {
	limit, err := f.Page.PageLimit()
	if err != nil {
		return controlplane.EnvPage{}, err
	}
	if len(f.Query) > MaxQueryBytes || strings.ContainsRune(f.Query, 0) {
		return controlplane.EnvPage{}, errs.Invalidf("q", "must be at most %d bytes without NUL", MaxQueryBytes)
	}
	offset, err := decodeCursor(f.Page.Cursor)
	if err != nil {
		return controlplane.EnvPage{}, err
	}
	pid, err := checkProject(ctx, s.db, projectID)
	if err != nil {
		return controlplane.EnvPage{}, translate(err)
	}
	where, args := ` WHERE project_id = $1`, []any{pid}
	if f.Query != "" {
		where += ` AND (name ILIKE $2 OR remarks ILIKE $2)`
		args = append(args, likePattern(f.Query))
	}
	var page controlplane.EnvPage
	if err := s.db.QueryRow(ctx, `SELECT count(*) FROM ql3.env_entries`+where, args...).Scan(&page.Total); err != nil {
		return controlplane.EnvPage{}, translate(err)
	}
	n := len(args)
	rows, err := s.db.Query(ctx, `SELECT `+columns+` FROM ql3.env_entries`+where+order+
		` LIMIT $`+strconv.Itoa(n+1)+` OFFSET $`+strconv.Itoa(n+2), append(args, limit+1, offset)...)
	if err != nil {
		return controlplane.EnvPage{}, translate(err)
	}
	defer rows.Close()
	for rows.Next() {
		r, err := scan(rows)
		if err != nil {
			return controlplane.EnvPage{}, translate(err)
		}
		page.Entries = append(page.Entries, r.Entry)
	}
	if err := rows.Err(); err != nil {
		return controlplane.EnvPage{}, translate(err)
	}
	if len(page.Entries) > limit {
		page.Entries = page.Entries[:limit]
		page.NextCursor = encodeCursor(offset + limit)
	}
	return page, nil
}

// RevealEnv implements controlplane.EnvStore: the read and its audit line
// are one transaction, so a value is never returned unaudited.
func (s *Store) RevealEnv(ctx context.Context, projectID, id string) (env.Entry, error) {
	c, err := s.Cipher()
	if err != nil {
		return env.Entry{}, err
	}
	var out env.Entry
	err = s.inTx(ctx, func(ctx context.Context, tx pgx.Tx) error {
		pid, err := checkProject(ctx, tx, projectID)
		if err != nil {
			return err
		}
		r, err := load(ctx, tx, pid, id)
		if err != nil {
			return err
		}
		if r.Value, err = c.Open(r.ID, r.Name, r.ciphertext); err != nil {
			return errs.E(errs.Internal, "", "%v", err)
		}
		out = r.Entry
		return publication.InsertAudit(ctx, tx, controlplane.AuditEnvReveal, "env_entry", r.ID,
			map[string]any{"projectId": projectID, "name": r.Name})
	})
	return out, err
}

// ExportEnvs implements controlplane.EnvStore.
func (s *Store) ExportEnvs(ctx context.Context, projectID string, withValues bool) ([]env.Entry, error) {
	var open func(id, name string, blob []byte) (string, error)
	if withValues {
		c, err := s.Cipher()
		if err != nil {
			return nil, err
		}
		open = c.Open
	}
	var out []env.Entry
	err := s.inTx(ctx, func(ctx context.Context, tx pgx.Tx) error {
		out = out[:0]
		pid, err := checkProject(ctx, tx, projectID)
		if err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `SELECT `+columns+` FROM ql3.env_entries WHERE project_id = $1`+order, pid)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			r, err := scan(rows)
			if err != nil {
				return err
			}
			if open != nil {
				if r.Value, err = open(r.ID, r.Name, r.ciphertext); err != nil {
					return errs.E(errs.Internal, "", "%v", err)
				}
			}
			out = append(out, r.Entry)
		}
		if err := rows.Err(); err != nil {
			return err
		}
		if !withValues {
			return nil
		}
		return publication.InsertAudit(ctx, tx, controlplane.AuditEnvExport, "project", projectID,
			map[string]any{"count": len(out), "withValues": true})
	})
	return out, err
}
