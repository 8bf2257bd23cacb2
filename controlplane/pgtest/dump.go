package pgtest

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strconv"
)

// Dump is `pg_dump` of database db (plain SQL, data included), run as the
// server user over the private socket: what a backup of the database
// holds (the env store's tests grep it for values).
func (c *Cluster) Dump(db string) ([]byte, error) {
	cmd := c.user.command(c.dir, filepath.Join(c.bin, "pg_dump"), "--host", c.sockDir, "--port", strconv.Itoa(c.port),
		"--username", superuser, "--dbname", db, "--no-password")
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("pg_dump %s: %w: %s", db, err, tail(stderr.String(), 2000))
	}
	return out.Bytes(), nil
}

// WALDir is the server's write-ahead log directory (pg_wal): every change
// of every database of the cluster, as written.
func (c *Cluster) WALDir() string { return filepath.Join(c.dataDir, "pg_wal") }
