package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/names"
	cn "github.com/ql3/ql3/core/notify"
	"github.com/ql3/ql3/core/notify/channel"
	"github.com/ql3/ql3/edge"
	nt "github.com/ql3/ql3/edge/notify"
)

var _ nt.Store = (*Store)(nil)

// sealName binds a channel's sealed settings (notifykit.SealName).
const sealName = nt.SealName

// MaxNotifyChannels and MaxNotifyRules bound the configuration.
const (
	MaxNotifyChannels = 256
	MaxNotifyRules    = 256
)

const channelColumns = `id, name, kind, public, enabled, created_at_ms, updated_at_ms`

func scanChannel(sc scanner) (nt.Channel, error) {
	var (
		c   nt.Channel
		pub string
	)
	if err := sc.Scan(&c.ID, &c.Name, &c.Kind, &pub, &c.Enabled, &c.CreatedAtMs, &c.UpdatedAtMs); err != nil {
		return nt.Channel{}, err
	}
	if err := json.Unmarshal([]byte(pub), &c.Public); err != nil {
		return nt.Channel{}, fmt.Errorf("channel %s public settings: %w", c.ID, err)
	}
	return c, nil
}

func checkNotifyName(field, name string) (string, error) { return names.CheckDisplay(field, name) }

func publicJSON(s channel.Settings) string {
	b, _ := json.Marshal(nt.Public(s))
	return string(b)
}

// CreateChannel implements nt.Store.
func (s *Store) CreateChannel(ctx context.Context, in nt.ChannelInput, actor string) (nt.Channel, error) {
	var err error
	if in.Name, err = checkNotifyName("name", in.Name); err != nil {
		return nt.Channel{}, err
	}
	if err := nt.CheckSettings(in.Settings); err != nil {
		return nt.Channel{}, err
	}
	c, err := s.envCipher()
	if err != nil {
		return nt.Channel{}, err
	}
	id, now := newID(), s.clock.Now().UnixMilli()
	err = s.writeDurable(ctx, func(tx *wtx, _ *signals) error {
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM notify_channels`).Scan(&n); err != nil {
			return err
		}
		if n >= MaxNotifyChannels {
			return errs.TooLargef("channels", "at most %d channels", MaxNotifyChannels)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO notify_channels (id, name, kind, sealed, public, enabled, created_at_ms, updated_at_ms)
VALUES (?, ?, ?, ?, ?, ?, ?, ?)`, id, in.Name, in.Settings.Kind, c.Seal(id, sealName, string(nt.EncodeSettings(in.Settings))),
			publicJSON(in.Settings), boolInt(in.Enabled), now, now); err != nil {
			return nameConflict(err, "name", in.Name)
		}
		return insertAudit(ctx, tx, edge.AuditEntry{AtMs: now, Action: nt.AuditChannelCreate, Target: id, Actor: actor, Detail: in.Settings.Kind + " " + in.Name})
	})
	if err != nil {
		return nt.Channel{}, err
	}
	return s.GetChannel(ctx, id)
}

func nameConflict(err error, field, name string) error {
	if errs.Code(translate(err)) == errs.Conflict {
		return errs.E(errs.Conflict, field, "the name %q is in use", name)
	}
	return err
}

func (s *Store) openChannel(ctx context.Context, q queryer, id string) (channel.Settings, nt.Channel, error) {
	c, err := s.envCipher()
	if err != nil {
		return channel.Settings{}, nt.Channel{}, err
	}
	var sealed []byte
	var pub string
	var ch nt.Channel
	err = q.QueryRowContext(ctx, `SELECT sealed, `+channelColumns+` FROM notify_channels WHERE id = ?`, id).Scan(&sealed,
		&ch.ID, &ch.Name, &ch.Kind, &pub, &ch.Enabled, &ch.CreatedAtMs, &ch.UpdatedAtMs)
	if errors.Is(err, sql.ErrNoRows) {
		return channel.Settings{}, nt.Channel{}, errs.NotFoundf("channel %s not found", id)
	}
	if err != nil {
		return channel.Settings{}, nt.Channel{}, translate(err)
	}
	if err := json.Unmarshal([]byte(pub), &ch.Public); err != nil {
		return channel.Settings{}, nt.Channel{}, errs.E(errs.Internal, "", "channel %s public settings: %v", id, err)
	}
	plain, err := c.Open(id, sealName, sealed)
	if err != nil {
		return channel.Settings{}, nt.Channel{}, errs.E(errs.Internal, "", "channel %s settings do not open with the env key", id)
	}
	st, err := nt.DecodeSettings([]byte(plain))
	return st, ch, err
}

// ChannelSettings implements nt.Store.
func (s *Store) ChannelSettings(ctx context.Context, id string) (channel.Settings, nt.Channel, error) {
	return s.openChannel(ctx, s.reader, id)
}

// UpdateChannel implements nt.Store.
func (s *Store) UpdateChannel(ctx context.Context, id string, p nt.ChannelPatch, actor string) (nt.Channel, error) {
	c, err := s.envCipher()
	if err != nil {
		return nt.Channel{}, err
	}
	if p.Name != nil {
		n, err := checkNotifyName("name", *p.Name)
		if err != nil {
			return nt.Channel{}, err
		}
		p.Name = &n
	}
	now := s.clock.Now().UnixMilli()
	err = s.writeDurable(ctx, func(tx *wtx, _ *signals) error {
		st, cur, err := s.openChannel(ctx, tx, id)
		if err != nil {
			return err
		}
		if p.Settings != nil {
			st = nt.Merge(st, *p.Settings)
			if err := nt.CheckSettings(st); err != nil {
				return err
			}
		}
		if p.Name != nil {
			cur.Name = *p.Name
		}
		if p.Enabled != nil {
			cur.Enabled = *p.Enabled
		}
		if _, err := tx.ExecContext(ctx, `UPDATE notify_channels SET name = ?, kind = ?, sealed = ?, public = ?, enabled = ?, updated_at_ms = ? WHERE id = ?`,
			cur.Name, st.Kind, c.Seal(id, sealName, string(nt.EncodeSettings(st))), publicJSON(st), boolInt(cur.Enabled), now, id); err != nil {
			return nameConflict(err, "name", cur.Name)
		}
		return insertAudit(ctx, tx, edge.AuditEntry{AtMs: now, Action: nt.AuditChannelUpdate, Target: id, Actor: actor, Detail: st.Kind + " " + cur.Name})
	})
	if err != nil {
		return nt.Channel{}, err
	}
	return s.GetChannel(ctx, id)
}

// DeleteChannel implements nt.Store. A channel a rule names is
// errs.Conflict (change the rule first); its deliveries stay in the log.
func (s *Store) DeleteChannel(ctx context.Context, id, actor string) error {
	rules, err := s.ListRules(ctx)
	if err != nil {
		return err
	}
	for _, r := range rules {
		for _, c := range r.Channels {
			if c == id {
				return errs.E(errs.Conflict, "id", "channel %s is used by rule %q", id, r.Name)
			}
		}
	}
	now := s.clock.Now().UnixMilli()
	return s.writeDurable(ctx, func(tx *wtx, _ *signals) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM notify_channels WHERE id = ?`, id)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return errs.NotFoundf("channel %s not found", id)
		}
		if _, err := tx.ExecContext(ctx, `UPDATE notify_outbox SET status = 'failed', last_error = 'channel deleted', finished_at_ms = ?
WHERE channel_id = ? AND status IN ('pending', 'held')`, now, id); err != nil {
			return err
		}
		return insertAudit(ctx, tx, edge.AuditEntry{AtMs: now, Action: nt.AuditChannelDelete, Target: id, Actor: actor})
	})
}

// GetChannel implements nt.Store.
func (s *Store) GetChannel(ctx context.Context, id string) (nt.Channel, error) {
	c, err := scanChannel(s.reader.QueryRowContext(ctx, `SELECT `+channelColumns+` FROM notify_channels WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nt.Channel{}, errs.NotFoundf("channel %s not found", id)
	}
	return c, translate(err)
}

// ListChannels implements nt.Store.
func (s *Store) ListChannels(ctx context.Context) ([]nt.Channel, error) {
	rows, err := s.reader.QueryContext(ctx, `SELECT `+channelColumns+` FROM notify_channels ORDER BY name LIMIT ?`, MaxNotifyChannels)
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	out := []nt.Channel{}
	for rows.Next() {
		c, err := scanChannel(rows)
		if err != nil {
			return nil, translate(err)
		}
		out = append(out, c)
	}
	return out, translate(rows.Err())
}

const ruleColumns = `id, name, body, enabled, created_at_ms, updated_at_ms`

func scanRule(sc scanner) (nt.Rule, error) {
	var (
		r    nt.Rule
		body string
	)
	if err := sc.Scan(&r.ID, &r.Name, &body, &r.Enabled, &r.CreatedAtMs, &r.UpdatedAtMs); err != nil {
		return nt.Rule{}, err
	}
	if err := nt.DecodeRule(body, &r.Rule); err != nil {
		return nt.Rule{}, fmt.Errorf("rule %s body: %w", r.ID, err)
	}
	return r, nil
}

// checkRule validates a rule and that its channels exist.
func checkRule(ctx context.Context, q queryer, in *nt.RuleInput) (cn.Rule, string, error) {
	var err error
	if in.Name, err = checkNotifyName("name", in.Name); err != nil {
		return cn.Rule{}, "", err
	}
	r, err := in.Rule.Validate()
	if err != nil {
		return cn.Rule{}, "", err
	}
	for i, id := range r.Channels {
		var n int
		if err := q.QueryRowContext(ctx, `SELECT count(*) FROM notify_channels WHERE id = ?`, id).Scan(&n); err != nil {
			return cn.Rule{}, "", err
		}
		if n == 0 {
			return cn.Rule{}, "", errs.Invalidf(fmt.Sprintf("channels[%d]", i), "no channel with id %q", id)
		}
	}
	return r, nt.EncodeRule(r), nil
}

// CreateRule implements nt.Store.
func (s *Store) CreateRule(ctx context.Context, in nt.RuleInput, actor string) (nt.Rule, error) {
	id, now := newID(), s.clock.Now().UnixMilli()
	err := s.writeDurable(ctx, func(tx *wtx, _ *signals) error {
		r, body, err := checkRule(ctx, tx, &in)
		if err != nil {
			return err
		}
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM notify_rules`).Scan(&n); err != nil {
			return err
		}
		if n >= MaxNotifyRules {
			return errs.TooLargef("rules", "at most %d rules", MaxNotifyRules)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO notify_rules (id, name, body, enabled, created_at_ms, updated_at_ms) VALUES (?, ?, ?, ?, ?, ?)`,
			id, in.Name, body, boolInt(r.Enabled), now, now); err != nil {
			return nameConflict(err, "name", in.Name)
		}
		return insertAudit(ctx, tx, edge.AuditEntry{AtMs: now, Action: nt.AuditRuleCreate, Target: id, Actor: actor, Detail: in.Name})
	})
	if err != nil {
		return nt.Rule{}, err
	}
	return s.GetRule(ctx, id)
}

// ReplaceRule implements nt.Store.
func (s *Store) ReplaceRule(ctx context.Context, id string, in nt.RuleInput, actor string) (nt.Rule, error) {
	now := s.clock.Now().UnixMilli()
	err := s.writeDurable(ctx, func(tx *wtx, _ *signals) error {
		r, body, err := checkRule(ctx, tx, &in)
		if err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, `UPDATE notify_rules SET name = ?, body = ?, enabled = ?, updated_at_ms = ? WHERE id = ?`,
			in.Name, body, boolInt(r.Enabled), now, id)
		if err != nil {
			return nameConflict(err, "name", in.Name)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return errs.NotFoundf("rule %s not found", id)
		}
		return insertAudit(ctx, tx, edge.AuditEntry{AtMs: now, Action: nt.AuditRuleUpdate, Target: id, Actor: actor, Detail: in.Name})
	})
	if err != nil {
		return nt.Rule{}, err
	}
	return s.GetRule(ctx, id)
}

// DeleteRule implements nt.Store.
func (s *Store) DeleteRule(ctx context.Context, id, actor string) error {
	now := s.clock.Now().UnixMilli()
	return s.writeDurable(ctx, func(tx *wtx, _ *signals) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM notify_rules WHERE id = ?`, id)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return errs.NotFoundf("rule %s not found", id)
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM notify_coalesce WHERE rule_id = ?`, id); err != nil {
			return err
		}
		return insertAudit(ctx, tx, edge.AuditEntry{AtMs: now, Action: nt.AuditRuleDelete, Target: id, Actor: actor})
	})
}

// GetRule implements nt.Store.
func (s *Store) GetRule(ctx context.Context, id string) (nt.Rule, error) {
	r, err := scanRule(s.reader.QueryRowContext(ctx, `SELECT `+ruleColumns+` FROM notify_rules WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nt.Rule{}, errs.NotFoundf("rule %s not found", id)
	}
	return r, translate(err)
}

// ListRules implements nt.Store.
func (s *Store) ListRules(ctx context.Context) ([]nt.Rule, error) {
	rows, err := s.reader.QueryContext(ctx, `SELECT `+ruleColumns+` FROM notify_rules ORDER BY name LIMIT ?`, MaxNotifyRules)
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	out := []nt.Rule{}
	for rows.Next() {
		r, err := scanRule(rows)
		if err != nil {
			return nil, translate(err)
		}
		out = append(out, r)
	}
	return out, translate(rows.Err())
}

// Audit writes one audit line (a channel's "send test").
func (s *Store) Audit(ctx context.Context, a edge.AuditEntry) error {
	if a.AtMs == 0 {
		a.AtMs = s.clock.Now().UnixMilli()
	}
	return s.write(ctx, func(tx *wtx, _ *signals) error { return insertAudit(ctx, tx, a) })
}
