package postgres

import "strconv"

// RandomDelayMsSQL is core/scriptpath.RandomDelayMs as an SQL expression
// of a text expression key and a bigint expression maxMs: the first 8
// bytes of SHA-256("ql3:random-delay:v1:" || key), read as an unsigned
// big-endian integer, modulo maxMs (0 when maxMs <= 0). Admission uses it
// so every replica computes the delay the edge and the Run's page do;
// TestRandomDelayMsSQLMatchesCore holds the two together.
func RandomDelayMsSQL(key, maxMs string) string {
	h := `encode(sha256(convert_to('ql3:random-delay:v1:' || (` + key + `), 'UTF8')), 'hex')`
	half := func(from int) string {
		return `(('x' || lpad(substr(` + h + `, ` + strconv.Itoa(from) + `, 8), 16, '0'))::bit(64)::bigint)::numeric`
	}
	return `(CASE WHEN (` + maxMs + `) > 0 THEN ((` + half(1) + ` * 4294967296 + ` + half(9) + `) % (` + maxMs + `))::bigint ELSE 0 END)`
}
