package protocol

import (
	"strconv"

	"github.com/ql3/ql3/core/canonjson"
	"github.com/ql3/ql3/core/env"
	"github.com/ql3/ql3/core/errs"
	"github.com/ql3/ql3/core/spec"
)

// EnvVar is one variable of the env store an offer carries (ADR 0051): the
// enabled entries of one name joined with "&" in QingLong order, as the
// authority resolved them when the attempt was claimed and narrowed to the
// task's scope (env.use; with env.inlineWins, the names the spec's inline
// environment sets are left out). The worker sets them over the spec's
// inline environment, masks every value (and each "&"-part) in the
// attempt's output, and never writes one to disk.
type EnvVar struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// MaxOfferEnvBytes is what an offer's env may add to MaxOfferBytes: 1 MiB
// of names and values (env.MaxProcessBytes), JSON-escaped (a control
// character becomes six bytes), plus the members' punctuation.
const MaxOfferEnvBytes = 6*env.MaxProcessBytes + 512<<10

// MaxOfferBodyBytes bounds an offer's body, env included: what a worker
// reads of a pull's answer.
const MaxOfferBodyBytes = MaxOfferBytes + MaxOfferEnvBytes

// offerEnvLimits are offerLimits widened for the env: long strings (a
// joined value, escaped) and up to env.MaxEntries variables. The reference
// decoder reads the whole offer under them (the spec inside is still held
// to its own limits by spec.Decode; every other member is checked by type
// and Validate). The fast path reads under offerFastLimits and widens the
// limits for the env member only (Scanner.SetLimits).
var offerEnvLimits = limits(MaxOfferBodyBytes, spec.MaxDepth+1, max(spec.MaxEntries, env.MaxEntries),
	max(spec.MaxStringBytes, 6*env.MaxJoinedBytes))

// offerFastLimits: the offer wraps the spec one level deeper than the
// spec's own limits, in a body bounded as an offer with env.
var offerFastLimits = limits(MaxOfferBodyBytes, spec.MaxDepth+1, spec.MaxEntries, spec.MaxStringBytes)

// checkEnv checks the env: names as env.ValidateName, values as
// env.ValidateValue, names strictly ascending (each once), everything
// within env.MaxProcessBytes.
func checkEnv(vars []EnvVar) error {
	if len(vars) > env.MaxEntries {
		return errs.Invalidf("env", "has %d variables, limit is %d", len(vars), env.MaxEntries)
	}
	total := 0
	for i, v := range vars {
		field := "env[" + strconv.Itoa(i) + "]"
		if err := env.ValidateName(v.Name); err != nil {
			return errs.Prefix(field, err)
		}
		if err := env.ValidateValue(v.Value); err != nil {
			return errs.Prefix(field, err)
		}
		if i > 0 && vars[i-1].Name >= v.Name {
			return errs.Invalidf(field+".name", "must sort after %q (names ascending, each once)", vars[i-1].Name)
		}
		total += len(v.Name) + len(v.Value) + 2
	}
	if total > env.MaxProcessBytes {
		return errs.Invalidf("env", "is %d bytes, limit is %d (1 MiB)", total, env.MaxProcessBytes)
	}
	return nil
}

// scanEnv reads the env in the fast path, under offerEnvLimits.
func scanEnv(s *canonjson.Scanner) []EnvVar {
	defer s.SetLimits(s.SetLimits(offerEnvLimits))
	var out []EnvVar
	if !s.Array() {
		return nil
	}
	for s.More() {
		var v EnvVar
		if s.Object() {
			for key, ok := s.Key(); ok; key, ok = s.Key() {
				switch key {
				case "name":
					v.Name = s.String()
				case "value":
					v.Value = s.String()
				default:
					s.Fail()
				}
			}
		}
		out = append(out, v)
	}
	return out
}

// EnvSecrets is what a worker masks the attempt's output with: each value
// and each "&"-part of at least env.MinMaskBytes bytes.
func (o Offer) EnvSecrets() [][]byte {
	vars := make([]env.Variable, len(o.Env))
	for i, v := range o.Env {
		vars[i] = env.Variable{Name: v.Name, Value: v.Value}
	}
	return env.SecretsOfVariables(vars)
}
