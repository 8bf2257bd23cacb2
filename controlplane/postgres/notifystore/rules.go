package notifystore

import (
	"context"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/ql3/ql3/controlplane/postgres"
	"github.com/ql3/ql3/controlplane/postgres/publication"
	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/names"
	cn "github.com/ql3/ql3/core/notify"
	"github.com/ql3/ql3/notifykit"
)

// nowMs is the database clock in milliseconds.
const nowMs = `(extract(epoch FROM clock_timestamp()) * 1000)::bigint`

func uuidOf(field, s string) (uuid.UUID, error) {
	u, err := uuid.Parse(s)
	if err != nil || len(s) != 36 {
		return uuid.UUID{}, errs.Invalidf(field, "must be a UUID, got %.80q", s)
	}
	return u, nil
}

const ruleColumns = `rule_id::text, name, body::text, enabled, created_at_ms, updated_at_ms`

func scanRule(r pgx.Row) (notifykit.Rule, error) {
	var out notifykit.Rule
	var body string
	if err := r.Scan(&out.ID, &out.Name, &body, &out.Enabled, &out.CreatedAtMs, &out.UpdatedAtMs); err != nil {
		return out, postgres.Translate(err)
	}
	if err := notifykit.DecodeRule(body, &out.Rule); err != nil {
		return out, errs.E(errs.Internal, "", "rule %s body: %v", out.ID, err)
	}
	return out, nil
}

// checkRule validates a rule and that its channels are the project's.
func checkRule(ctx context.Context, tx pgx.Tx, project string, in *notifykit.RuleInput) (cn.Rule, error) {
	var err error
	if in.Name, err = names.CheckDisplay("name", in.Name); err != nil {
		return cn.Rule{}, err
	}
	r, err := in.Rule.Validate()
	if err != nil {
		return cn.Rule{}, err
	}
	for i, id := range r.Channels {
		var n int
		if _, err := uuid.Parse(id); err == nil {
			if err := tx.QueryRow(ctx, `SELECT count(*) FROM ql3.notify_channels WHERE channel_id = $1::uuid AND project_id = $2::uuid`, id, project).Scan(&n); err != nil {
				return cn.Rule{}, err
			}
		}
		if n == 0 {
			return cn.Rule{}, errs.Invalidf(fmt.Sprintf("channels[%d]", i), "no channel with id %q in this project", id)
		}
	}
	return r, nil
}

// CreateRule implements controlplane.NotifyConfig.
func (s *Config) CreateRule(ctx context.Context, project string, in notifykit.RuleInput) (notifykit.Rule, error) {
	if err := checkIDs(project, ""); err != nil {
		return notifykit.Rule{}, err
	}
	uid, err := uuid.NewRandom()
	if err != nil {
		return notifykit.Rule{}, err
	}
	var out notifykit.Rule
	err = s.tx(ctx, func(ctx context.Context, tx pgx.Tx) error {
		r, err := checkRule(ctx, tx, project, &in)
		if err != nil {
			return err
		}
		var n int
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM ql3.notify_rules WHERE project_id = $1::uuid`, project).Scan(&n); err != nil {
			return err
		}
		if n >= MaxRules {
			return errs.TooLargef("rules", "at most %d rules per project", MaxRules)
		}
		row := tx.QueryRow(ctx, `INSERT INTO ql3.notify_rules (rule_id, project_id, name, body, enabled, created_at_ms, updated_at_ms)
VALUES ($1::uuid, $2::uuid, $3, $4::text::jsonb, $5, `+nowMs+`, `+nowMs+`) RETURNING `+ruleColumns, uid.String(), project, in.Name, notifykit.EncodeRule(r), r.Enabled)
		if out, err = scanRule(row); err != nil {
			return nameTaken(err, in.Name)
		}
		return publication.InsertAudit(ctx, tx, notifykit.AuditRuleCreate, "notify_rule", out.ID, map[string]any{"projectId": project, "name": in.Name})
	})
	return out, err
}

// ReplaceRule implements controlplane.NotifyConfig.
func (s *Config) ReplaceRule(ctx context.Context, project, id string, in notifykit.RuleInput) (notifykit.Rule, error) {
	if err := checkIDs(project, id); err != nil {
		return notifykit.Rule{}, err
	}
	var out notifykit.Rule
	err := s.tx(ctx, func(ctx context.Context, tx pgx.Tx) error {
		r, err := checkRule(ctx, tx, project, &in)
		if err != nil {
			return err
		}
		row := tx.QueryRow(ctx, `UPDATE ql3.notify_rules SET name = $3, body = $4::text::jsonb, enabled = $5, updated_at_ms = greatest(created_at_ms, `+nowMs+`)
WHERE rule_id = $1::uuid AND project_id = $2::uuid RETURNING `+ruleColumns, id, project, in.Name, notifykit.EncodeRule(r), r.Enabled)
		if out, err = scanRule(row); err != nil {
			if errs.Code(err) == errs.NotFound {
				return errs.NotFoundf("no rule %s in this project", id)
			}
			return nameTaken(err, in.Name)
		}
		return publication.InsertAudit(ctx, tx, notifykit.AuditRuleUpdate, "notify_rule", id, map[string]any{"projectId": project, "name": in.Name})
	})
	return out, err
}

// DeleteRule implements controlplane.NotifyConfig.
func (s *Config) DeleteRule(ctx context.Context, project, id string) error {
	if err := checkIDs(project, id); err != nil {
		return err
	}
	return s.tx(ctx, func(ctx context.Context, tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `DELETE FROM ql3.notify_rules WHERE rule_id = $1::uuid AND project_id = $2::uuid`, id, project)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return errs.NotFoundf("no rule %s in this project", id)
		}
		return publication.InsertAudit(ctx, tx, notifykit.AuditRuleDelete, "notify_rule", id, map[string]any{"projectId": project})
	})
}

// GetRule implements controlplane.NotifyConfig.
func (s *Config) GetRule(ctx context.Context, project, id string) (notifykit.Rule, error) {
	if err := checkIDs(project, id); err != nil {
		return notifykit.Rule{}, err
	}
	r, err := scanRule(s.db.QueryRow(ctx, `SELECT `+ruleColumns+` FROM ql3.notify_rules WHERE rule_id = $1::uuid AND project_id = $2::uuid`, id, project))
	if err != nil {
		return r, notFound(err, "rule", id)
	}
	return r, nil
}

// ListRules implements controlplane.NotifyConfig.
func (s *Config) ListRules(ctx context.Context, project string) ([]notifykit.Rule, error) {
	if err := checkIDs(project, ""); err != nil {
		return nil, err
	}
	return listRules(ctx, s.db, `SELECT `+ruleColumns+` FROM ql3.notify_rules WHERE project_id = $1::uuid ORDER BY name LIMIT `+fmt.Sprint(MaxRules), project)
}

func listRules(ctx context.Context, db postgres.DB, sql string, args ...any) ([]notifykit.Rule, error) {
	rows, err := db.Query(ctx, sql, args...)
	if err != nil {
		return nil, postgres.Translate(err)
	}
	defer rows.Close()
	out := []notifykit.Rule{}
	for rows.Next() {
		r, err := scanRule(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, postgres.Translate(rows.Err())
}

func sprintf(format string, args ...any) string { return fmt.Sprintf(format, args...) }
