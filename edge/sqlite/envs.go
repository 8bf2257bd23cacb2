package sqlite

import (
	"context"
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/ql3/ql3/core/env"
	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/edge"
	"github.com/ql3/ql3/edge/envcrypt"
)

var _ edge.EnvStore = (*Store)(nil)

// MaxEnvQueryBytes bounds the search text of ListEnvs.
const MaxEnvQueryBytes = 128

const (
	envColumns = `id, name, ciphertext, value_bytes, remarks, enabled, position, pinned, labels, created_at_ms, updated_at_ms`
	envOrder   = ` ORDER BY pinned DESC, position DESC, created_at_ms, id`
)

// envRow is an entry as stored: the value sealed.
type envRow struct {
	env.Entry
	ciphertext []byte
	valueBytes int
}

func scanEnv(sc scanner) (envRow, error) {
	var (
		r      envRow
		labels string
	)
	if err := sc.Scan(&r.ID, &r.Name, &r.ciphertext, &r.valueBytes, &r.Remarks, &r.Enabled, &r.Position, &r.Pinned,
		&labels, &r.CreatedAtMs, &r.UpdatedAtMs); err != nil {
		return envRow{}, err
	}
	if err := json.Unmarshal([]byte(labels), &r.Labels); err != nil {
		return envRow{}, fmt.Errorf("env %s labels: %w", r.ID, err)
	}
	if len(r.Labels) == 0 {
		r.Labels = nil
	}
	return r, nil
}

func labelsJSON(l []string) string {
	if len(l) == 0 {
		return "[]"
	}
	b, _ := json.Marshal(l) // []string always encodes
	return string(b)
}

func loadEnv(ctx context.Context, q queryer, id string) (envRow, error) {
	r, err := scanEnv(q.QueryRowContext(ctx, `SELECT `+envColumns+` FROM envs WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return envRow{}, errs.NotFoundf("env entry %s not found", id)
	}
	return r, translate(err)
}

// enabledSizes reads what env.CheckSizes needs, leaving out except.
func enabledSizes(ctx context.Context, q queryer, except map[string]bool) ([]env.Size, error) {
	rows, err := q.QueryContext(ctx, `SELECT id, name, value_bytes FROM envs WHERE enabled = 1`)
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
		if !except[id] {
			out = append(out, sz)
		}
	}
	return out, rows.Err()
}

// CreateEnvs implements edge.EnvStore: all entries in one transaction, or
// none. With more than one entry, errors name it ("entries[2].value").
func (s *Store) CreateEnvs(ctx context.Context, in []edge.EnvInput, actor string) ([]env.Entry, error) {
	c, err := s.envCipher()
	if err != nil {
		return nil, err
	}
	if len(in) == 0 {
		return nil, errs.Invalidf("entries", "at least one entry is required")
	}
	if len(in) > env.MaxEntries {
		return nil, errs.Invalidf("entries", "has %d entries, the env store holds at most %d", len(in), env.MaxEntries)
	}
	field := func(i int, err error) error {
		if len(in) == 1 {
			return err
		}
		return errs.Prefix("entries["+strconv.Itoa(i)+"]", err)
	}
	for i, e := range in {
		if err := (env.Entry{Name: e.Name, Value: e.Value, Remarks: e.Remarks, Labels: e.Labels}).Validate(); err != nil {
			return nil, field(i, err)
		}
	}
	now := s.clock.Now().UnixMilli()
	var out []env.Entry
	err = s.envWrite(ctx, func(tx *wtx, _ *signals) error {
		var err error
		out, err = insertEnvs(ctx, tx, c, in, now)
		if err != nil {
			return err
		}
		names := make([]string, 0, len(in))
		for _, e := range in {
			names = append(names, e.Name)
		}
		target := out[0].ID
		if len(out) > 1 {
			target = strconv.Itoa(len(out)) + " entries"
		}
		return insertAudit(ctx, tx, edge.AuditEntry{AtMs: now, Action: edge.AuditEnvCreate, Target: target, Actor: actor,
			Detail: "names: " + strings.Join(names, ",")})
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// insertEnvs appends validated entries after every existing one, in their
// order, within the store's limits (CreateEnvs, ApplyImport).
func insertEnvs(ctx context.Context, tx *wtx, c *envcrypt.Cipher, in []edge.EnvInput, now int64) ([]env.Entry, error) {
	var count int
	var lowest int64
	if err := tx.QueryRowContext(ctx, `SELECT count(*), IFNULL(min(position), 0) FROM envs`).Scan(&count, &lowest); err != nil {
		return nil, err
	}
	if count+len(in) > env.MaxEntries {
		return nil, errs.Invalidf("entries", "the env store holds at most %d entries; it has %d, adding %d would exceed the limit", env.MaxEntries, count, len(in))
	}
	sizes, err := enabledSizes(ctx, tx, nil)
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
	out := make([]env.Entry, 0, len(in))
	for i, e := range in {
		id := newID()
		ent := env.Entry{ID: id, Name: e.Name, Remarks: e.Remarks, Enabled: e.Enabled, Position: positions[i], Pinned: e.Pinned,
			Labels: e.Labels, CreatedAtMs: now, UpdatedAtMs: now}
		if _, err := tx.ExecContext(ctx, `INSERT INTO envs (`+envColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			id, e.Name, c.Seal(id, e.Name, e.Value), len(e.Value), e.Remarks, boolInt(e.Enabled), positions[i],
			boolInt(e.Pinned), labelsJSON(e.Labels), now, now); err != nil {
			return nil, err
		}
		out = append(out, ent)
	}
	return out, nil
}

// UpdateEnv implements edge.EnvStore.
func (s *Store) UpdateEnv(ctx context.Context, id string, p edge.EnvPatch, actor string) (env.Entry, error) {
	c, err := s.envCipher()
	if err != nil {
		return env.Entry{}, err
	}
	var changed []string
	check := func(name string, set bool, err error) error {
		if set {
			changed = append(changed, name)
		}
		return err
	}
	if p.Name != nil {
		if err := check("name", true, env.ValidateName(*p.Name)); err != nil {
			return env.Entry{}, err
		}
	}
	if p.Value != nil {
		if err := check("value", true, env.ValidateValue(*p.Value)); err != nil {
			return env.Entry{}, err
		}
	}
	if p.Remarks != nil {
		if err := check("remarks", true, env.ValidateRemarks(*p.Remarks)); err != nil {
			return env.Entry{}, err
		}
	}
	if p.Labels != nil {
		if err := check("labels", true, env.ValidateLabels(*p.Labels)); err != nil {
			return env.Entry{}, err
		}
	}
	if p.Enabled != nil {
		changed = append(changed, "enabled")
	}
	if p.Pinned != nil {
		changed = append(changed, "pinned")
	}
	if len(changed) == 0 {
		return env.Entry{}, errs.Invalidf("", "nothing to change: give at least one of name, value, remarks, enabled, pinned, labels")
	}
	now := s.clock.Now().UnixMilli()
	var out env.Entry
	err = s.envWrite(ctx, func(tx *wtx, _ *signals) error {
		r, err := loadEnv(ctx, tx, id)
		if err != nil {
			return err
		}
		blob, size := r.ciphertext, r.valueBytes
		name := r.Name
		if p.Name != nil {
			name = *p.Name
		}
		switch {
		case p.Value != nil:
			blob, size = c.Seal(id, name, *p.Value), len(*p.Value)
		case name != r.Name: // the ciphertext is bound to the name: re-seal
			v, err := c.Open(id, r.Name, r.ciphertext)
			if err != nil {
				return err
			}
			blob = c.Seal(id, name, v)
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
		e.UpdatedAtMs = now
		if e.Enabled {
			sizes, err := enabledSizes(ctx, tx, map[string]bool{id: true})
			if err != nil {
				return err
			}
			if err := env.CheckSizes(append(sizes, env.Size{Name: name, ValueBytes: size})); err != nil {
				return err
			}
		}
		if _, err := tx.ExecContext(ctx, `UPDATE envs SET name = ?, ciphertext = ?, value_bytes = ?, remarks = ?, enabled = ?,
    pinned = ?, labels = ?, updated_at_ms = ? WHERE id = ?`, name, blob, size, e.Remarks, boolInt(e.Enabled), boolInt(e.Pinned),
			labelsJSON(e.Labels), now, id); err != nil {
			return err
		}
		out = e
		return insertAudit(ctx, tx, edge.AuditEntry{AtMs: now, Action: edge.AuditEnvUpdate, Target: id, Actor: actor,
			Detail: "changed: " + strings.Join(changed, ",")})
	})
	return out, err
}

// DeleteEnvs implements edge.EnvStore. Unknown ids are not an error; the
// count says how many existed.
func (s *Store) DeleteEnvs(ctx context.Context, ids []string, actor string) (int, error) {
	if len(ids) == 0 || len(ids) > env.MaxEntries {
		return 0, errs.Invalidf("ids", "must name 1..%d entries, got %d", env.MaxEntries, len(ids))
	}
	now := s.clock.Now().UnixMilli()
	deleted := 0
	err := s.envWrite(ctx, func(tx *wtx, _ *signals) error {
		for _, id := range ids {
			res, err := tx.ExecContext(ctx, `DELETE FROM envs WHERE id = ?`, id)
			if err != nil {
				return err
			}
			n, _ := res.RowsAffected()
			deleted += int(n)
		}
		target := ids[0]
		if len(ids) > 1 {
			target = strconv.Itoa(len(ids)) + " entries"
		}
		return insertAudit(ctx, tx, edge.AuditEntry{AtMs: now, Action: edge.AuditEnvDelete, Target: target, Actor: actor,
			Detail: fmt.Sprintf("%d deleted", deleted)})
	})
	return deleted, err
}

// MoveEnv implements edge.EnvStore.
func (s *Store) MoveEnv(ctx context.Context, id, before string) (env.Entry, error) {
	now := s.clock.Now().UnixMilli()
	var out env.Entry
	err := s.envWrite(ctx, func(tx *wtx, _ *signals) error {
		rows, err := tx.QueryContext(ctx, `SELECT id, pinned, position, created_at_ms FROM envs`)
		if err != nil {
			return err
		}
		var slots []env.Slot
		for rows.Next() {
			var sl env.Slot
			if err := rows.Scan(&sl.ID, &sl.Pinned, &sl.Position, &sl.CreatedAtMs); err != nil {
				rows.Close()
				return err
			}
			slots = append(slots, sl)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		moves, err := env.MoveBefore(slots, id, before)
		if err != nil {
			return err
		}
		for mid, pos := range moves {
			if _, err := tx.ExecContext(ctx, `UPDATE envs SET position = ?, updated_at_ms = CASE WHEN id = ? THEN ? ELSE updated_at_ms END
WHERE id = ?`, pos, id, now, mid); err != nil {
				return err
			}
		}
		r, err := loadEnv(ctx, tx, id)
		out = r.Entry
		return err
	})
	return out, err
}

// GetEnv implements edge.EnvStore.
func (s *Store) GetEnv(ctx context.Context, id string) (env.Entry, error) {
	r, err := loadEnv(ctx, s.reader, id)
	return r.Entry, err
}

// envCursor is an offset into the filtered list: base64url("e1:<n>").
func encodeEnvCursor(n int) string {
	return base64.RawURLEncoding.EncodeToString([]byte("e1:" + strconv.Itoa(n)))
}

func decodeEnvCursor(s string) (int, error) {
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

// ListEnvs implements edge.EnvStore. Entries carry no values.
func (s *Store) ListEnvs(ctx context.Context, f edge.EnvFilter) (edge.EnvPage, error) {
	limit, err := pageLimit(f.Limit)
	if err != nil {
		return edge.EnvPage{}, err
	}
	if len(f.Query) > MaxEnvQueryBytes || strings.ContainsRune(f.Query, 0) {
		return edge.EnvPage{}, errs.Invalidf("q", "must be at most %d bytes without NUL", MaxEnvQueryBytes)
	}
	offset, err := decodeEnvCursor(f.Cursor)
	if err != nil {
		return edge.EnvPage{}, err
	}
	where, args := "", []any{}
	if f.Query != "" {
		where = ` WHERE name LIKE ? ESCAPE '\' OR remarks LIKE ? ESCAPE '\'`
		p := likePattern(f.Query)
		args = append(args, p, p)
	}
	var page edge.EnvPage
	if err := s.reader.QueryRowContext(ctx, `SELECT count(*) FROM envs`+where, args...).Scan(&page.Total); err != nil {
		return edge.EnvPage{}, translate(err)
	}
	rows, err := s.reader.QueryContext(ctx, `SELECT `+envColumns+` FROM envs`+where+envOrder+` LIMIT ? OFFSET ?`,
		append(args, limit+1, offset)...)
	if err != nil {
		return edge.EnvPage{}, translate(err)
	}
	defer rows.Close()
	for rows.Next() {
		r, err := scanEnv(rows)
		if err != nil {
			return edge.EnvPage{}, translate(err)
		}
		page.Entries = append(page.Entries, r.Entry)
	}
	if err := rows.Err(); err != nil {
		return edge.EnvPage{}, translate(err)
	}
	if len(page.Entries) > limit {
		page.Entries = page.Entries[:limit]
		page.NextCursor = encodeEnvCursor(offset + limit)
	}
	return page, nil
}

// RevealEnv implements edge.EnvStore: the read and its audit line are one
// transaction, so a value is never returned unaudited.
func (s *Store) RevealEnv(ctx context.Context, id, actor string) (env.Entry, error) {
	c, err := s.envCipher()
	if err != nil {
		return env.Entry{}, err
	}
	now := s.clock.Now().UnixMilli()
	var out env.Entry
	err = s.writeDurable(ctx, func(tx *wtx, _ *signals) error {
		r, err := loadEnv(ctx, tx, id)
		if err != nil {
			return err
		}
		if r.Value, err = c.Open(r.ID, r.Name, r.ciphertext); err != nil {
			return errs.E(errs.Internal, "", "%v", err)
		}
		out = r.Entry
		return insertAudit(ctx, tx, edge.AuditEntry{AtMs: now, Action: edge.AuditEnvReveal, Target: id, Actor: actor, Detail: "name " + r.Name})
	})
	return out, err
}

// ExportEnvs implements edge.EnvStore.
func (s *Store) ExportEnvs(ctx context.Context, withValues bool, actor string) ([]env.Entry, error) {
	if !withValues {
		return s.readEnvs(ctx, s.reader, "", nil)
	}
	var out []env.Entry
	err := s.writeDurable(ctx, func(tx *wtx, _ *signals) error {
		var err error
		if out, err = s.readEnvs(ctx, tx, "", s.mustCipher); err != nil {
			return err
		}
		return insertAudit(ctx, tx, edge.AuditEntry{AtMs: s.clock.Now().UnixMilli(), Action: edge.AuditEnvExport,
			Target: strconv.Itoa(len(out)) + " entries", Actor: actor, Detail: "with values"})
	})
	return out, err
}

func (s *Store) mustCipher() (openFunc, error) {
	c, err := s.envCipher()
	if err != nil {
		return nil, err
	}
	return c.Open, nil
}

type openFunc func(id, name string, blob []byte) (string, error)

// readEnvs reads entries in list order; with cipher set it decrypts.
func (s *Store) readEnvs(ctx context.Context, q queryer, where string, cipher func() (openFunc, error)) ([]env.Entry, error) {
	var open openFunc
	if cipher != nil {
		var err error
		if open, err = cipher(); err != nil {
			return nil, err
		}
	}
	rows, err := q.QueryContext(ctx, `SELECT `+envColumns+` FROM envs`+where+envOrder)
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	var out []env.Entry
	for rows.Next() {
		r, err := scanEnv(rows)
		if err != nil {
			return nil, translate(err)
		}
		if open != nil {
			if r.Value, err = open(r.ID, r.Name, r.ciphertext); err != nil {
				return nil, errs.E(errs.Internal, "", "%v", err)
			}
		}
		out = append(out, r.Entry)
	}
	return out, translate(rows.Err())
}

// EnabledEnvs implements edge.EnvStore.
func (s *Store) EnabledEnvs(ctx context.Context) ([]env.Entry, error) {
	return s.readEnvs(ctx, s.reader, ` WHERE enabled = 1`, s.mustCipher)
}
