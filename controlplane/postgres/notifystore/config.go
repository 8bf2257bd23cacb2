package notifystore

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/ql3/ql3/controlplane"
	"github.com/ql3/ql3/controlplane/postgres"
	"github.com/ql3/ql3/controlplane/postgres/publication"
	"github.com/ql3/ql3/core/envseal"
	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/names"
	"github.com/ql3/ql3/core/notify/channel"
	"github.com/ql3/ql3/notifykit"
)

// Bounds of a project's configuration.
const (
	MaxChannels = 256
	MaxRules    = 256
)

// Config is controlplane.NotifyConfig on a ql3_admin pool.
type Config struct {
	db *pgxpool.Pool
	c  *envseal.Cipher
}

// NewConfig returns the admin port.
func NewConfig(admin *pgxpool.Pool, c *envseal.Cipher) *Config { return &Config{db: admin, c: c} }

var _ controlplane.NotifyConfig = (*Config)(nil)

const channelColumns = `channel_id::text, name, kind, public::text, enabled, created_at_ms, updated_at_ms`

func scanChannel(r pgx.Row) (notifykit.Channel, error) {
	var c notifykit.Channel
	var pub string
	if err := r.Scan(&c.ID, &c.Name, &c.Kind, &pub, &c.Enabled, &c.CreatedAtMs, &c.UpdatedAtMs); err != nil {
		return c, postgres.Translate(err)
	}
	if err := json.Unmarshal([]byte(pub), &c.Public); err != nil {
		return c, errs.E(errs.Internal, "", "channel %s public settings: %v", c.ID, err)
	}
	return c, nil
}

func publicJSON(s channel.Settings) string {
	b, _ := json.Marshal(notifykit.Public(s))
	return string(b)
}

func checkIDs(project, id string) error {
	if _, err := uuidOf("projectId", project); err != nil {
		return err
	}
	if id != "" {
		if _, err := uuidOf("id", id); err != nil {
			return err
		}
	}
	return nil
}

func (s *Config) tx(ctx context.Context, fn func(ctx context.Context, tx pgx.Tx) error) error {
	return postgres.InTx(ctx, s.db, postgres.TxOptions{}, fn)
}

// CreateChannel implements controlplane.NotifyConfig.
func (s *Config) CreateChannel(ctx context.Context, project string, in notifykit.ChannelInput) (notifykit.Channel, error) {
	var err error
	if err = checkIDs(project, ""); err != nil {
		return notifykit.Channel{}, err
	}
	if in.Name, err = names.CheckDisplay("name", in.Name); err != nil {
		return notifykit.Channel{}, err
	}
	if err := notifykit.CheckSettings(in.Settings); err != nil {
		return notifykit.Channel{}, err
	}
	uid, err := controlplane.NewID()
	if err != nil {
		return notifykit.Channel{}, err
	}
	id := uid.String()
	var out notifykit.Channel
	err = s.tx(ctx, func(ctx context.Context, tx pgx.Tx) error {
		var n int
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM ql3.notify_channels WHERE project_id = $1::uuid`, project).Scan(&n); err != nil {
			return err
		}
		if n >= MaxChannels {
			return errs.TooLargef("channels", "at most %d channels per project", MaxChannels)
		}
		row := tx.QueryRow(ctx, `INSERT INTO ql3.notify_channels (channel_id, project_id, name, kind, sealed, public, enabled, created_at_ms, updated_at_ms)
VALUES ($1::uuid, $2::uuid, $3, $4, $5, $6::text::jsonb, $7, `+nowMs+`, `+nowMs+`) RETURNING `+channelColumns,
			id, project, in.Name, in.Settings.Kind, s.c.Seal(id, notifykit.SealName, string(notifykit.EncodeSettings(in.Settings))),
			publicJSON(in.Settings), in.Enabled)
		if out, err = scanChannel(row); err != nil {
			return nameTaken(err, in.Name)
		}
		return publication.InsertAudit(ctx, tx, notifykit.AuditChannelCreate, "notify_channel", id,
			map[string]any{"projectId": project, "name": in.Name, "kind": in.Settings.Kind})
	})
	return out, err
}

func nameTaken(err error, name string) error {
	if errs.Code(err) == errs.Conflict {
		return errs.E(errs.Conflict, "name", "the name %q is taken in this project", name)
	}
	return err
}

// UpdateChannel implements controlplane.NotifyConfig.
func (s *Config) UpdateChannel(ctx context.Context, project, id string, p notifykit.ChannelPatch) (notifykit.Channel, error) {
	if err := checkIDs(project, id); err != nil {
		return notifykit.Channel{}, err
	}
	var out notifykit.Channel
	err := s.tx(ctx, func(ctx context.Context, tx pgx.Tx) error {
		var name, kind string
		var enabled bool
		var sealed []byte
		err := tx.QueryRow(ctx, `SELECT name, kind, enabled, sealed FROM ql3.notify_channels WHERE channel_id = $1::uuid AND project_id = $2::uuid FOR UPDATE`,
			id, project).Scan(&name, &kind, &enabled, &sealed)
		if err != nil {
			return notFound(err, "channel", id)
		}
		plain, err := s.c.Open(id, notifykit.SealName, sealed)
		if err != nil {
			return errs.E(errs.Internal, "", "channel %s settings do not open: %v", id, err)
		}
		st, err := notifykit.DecodeSettings([]byte(plain))
		if err != nil {
			return err
		}
		if p.Name != nil {
			if name, err = names.CheckDisplay("name", *p.Name); err != nil {
				return err
			}
		}
		if p.Enabled != nil {
			enabled = *p.Enabled
		}
		if p.Settings != nil {
			st = notifykit.Merge(st, *p.Settings)
			if err := notifykit.CheckSettings(st); err != nil {
				return err
			}
		}
		row := tx.QueryRow(ctx, `UPDATE ql3.notify_channels SET name = $3, kind = $4, sealed = $5, public = $6::text::jsonb, enabled = $7,
	updated_at_ms = greatest(created_at_ms, `+nowMs+`) WHERE channel_id = $1::uuid AND project_id = $2::uuid RETURNING `+channelColumns,
			id, project, name, st.Kind, s.c.Seal(id, notifykit.SealName, string(notifykit.EncodeSettings(st))), publicJSON(st), enabled)
		if out, err = scanChannel(row); err != nil {
			return nameTaken(err, name)
		}
		return publication.InsertAudit(ctx, tx, notifykit.AuditChannelUpdate, "notify_channel", id,
			map[string]any{"projectId": project, "name": name, "kind": st.Kind, "enabled": enabled, "settingsChanged": p.Settings != nil})
	})
	return out, err
}

func notFound(err error, what, id string) error {
	if errs.Code(postgres.Translate(err)) == errs.NotFound {
		return errs.NotFoundf("no %s %s in this project", what, id)
	}
	return err
}

// DeleteChannel implements controlplane.NotifyConfig. A channel a rule
// still names is refused.
func (s *Config) DeleteChannel(ctx context.Context, project, id string) error {
	if err := checkIDs(project, id); err != nil {
		return err
	}
	return s.tx(ctx, func(ctx context.Context, tx pgx.Tx) error {
		var rule string
		err := tx.QueryRow(ctx, `SELECT name FROM ql3.notify_rules WHERE project_id = $1::uuid AND body->'channels' ? $2 LIMIT 1`, project, id).Scan(&rule)
		if err == nil {
			return errs.E(errs.Conflict, "id", "the rule %q sends to this channel; change or delete it first", rule)
		}
		tag, err := tx.Exec(ctx, `DELETE FROM ql3.notify_channels WHERE channel_id = $1::uuid AND project_id = $2::uuid`, id, project)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return errs.NotFoundf("no channel %s in this project", id)
		}
		return publication.InsertAudit(ctx, tx, notifykit.AuditChannelDelete, "notify_channel", id, map[string]any{"projectId": project})
	})
}

// GetChannel implements controlplane.NotifyConfig.
func (s *Config) GetChannel(ctx context.Context, project, id string) (notifykit.Channel, error) {
	if err := checkIDs(project, id); err != nil {
		return notifykit.Channel{}, err
	}
	c, err := scanChannel(s.db.QueryRow(ctx, `SELECT `+channelColumns+` FROM ql3.notify_channels WHERE channel_id = $1::uuid AND project_id = $2::uuid`, id, project))
	if err != nil {
		return c, notFound(err, "channel", id)
	}
	return c, nil
}

// ListChannels implements controlplane.NotifyConfig (at most MaxChannels).
func (s *Config) ListChannels(ctx context.Context, project string) ([]notifykit.Channel, error) {
	if err := checkIDs(project, ""); err != nil {
		return nil, err
	}
	rows, err := s.db.Query(ctx, `SELECT `+channelColumns+` FROM ql3.notify_channels WHERE project_id = $1::uuid ORDER BY name LIMIT `+fmt.Sprint(MaxChannels), project)
	if err != nil {
		return nil, postgres.Translate(err)
	}
	defer rows.Close()
	out := []notifykit.Channel{}
	for rows.Next() {
		c, err := scanChannel(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, postgres.Translate(rows.Err())
}
