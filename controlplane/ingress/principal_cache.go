package ingress

import (
	"context"
	"crypto/sha256"
	"sync"
	"time"

	"github.com/ql3/ql3/controlplane"
)

// controlplane.Principal cache (ADR 0010 amendment "principal cache"). Every worker
// request authenticates; without a cache that is one read-only round trip
// and commit on the ingress pool per request — four of the nine commits of
// a remote run, and half of every idle pull. A successful authentication
// is remembered for at most TTL (0–10 s), so a credential revoked,
// superseded by an observed successor, expired, or a worker disabled, is
// refused at most TTL after that change committed. Refusals are never
// cached: a denied request always asks the database again and is audited.

// controlplane.Principal cache bounds.
const (
	DefaultPrincipalCacheTTL = 5 * time.Second
	MaxPrincipalCacheTTL     = 10 * time.Second
	// MaxPrincipalCacheEntries bounds the cache's memory: one entry per
	// (credential, certificate identities); a full cache stops adding
	// until expired entries are swept.
	MaxPrincipalCacheEntries = 8192
)

// principalCacheDomain separates cache keys from other SHA-256s.
const principalCacheDomain = "ql3/ingress-principal-cache/v1"

type cachedPrincipal struct {
	p       controlplane.Principal
	expires time.Time
}

// PrincipalCache is an controlplane.Authenticator that remembers successful
// authentications of inner for a bounded time. Safe for concurrent use.
type PrincipalCache struct {
	inner   controlplane.Authenticator
	ttl     time.Duration
	now     func() time.Time
	mu      sync.Mutex
	entries map[[sha256.Size]byte]cachedPrincipal
}

// NewPrincipalCache wraps inner. ttl ≤ 0 returns inner itself (no
// caching); ttl above MaxPrincipalCacheTTL is capped to it. now is the
// clock (time.Now in production; tests inject one).
func NewPrincipalCache(inner controlplane.Authenticator, ttl time.Duration, now func() time.Time) controlplane.Authenticator {
	if ttl <= 0 {
		return inner
	}
	return &PrincipalCache{inner: inner, ttl: min(ttl, MaxPrincipalCacheTTL), now: now,
		entries: make(map[[sha256.Size]byte]cachedPrincipal)}
}

// principalKey is the SHA-256 of the presented credential text and the
// certificate identities: the decision depends on both. The key lives
// only in this process's memory, never in a log, an error or the database.
func principalKey(p controlplane.Presented) [sha256.Size]byte {
	h := sha256.New()
	h.Write([]byte(principalCacheDomain))
	h.Write([]byte{0})
	h.Write([]byte(p.Credential))
	for _, id := range p.CertIdentities {
		h.Write([]byte{0})
		h.Write([]byte(id))
	}
	var k [sha256.Size]byte
	h.Sum(k[:0])
	return k
}

// Authenticate answers from the cache when an unexpired success for the
// same credential and certificate identities is there, else asks inner
// and remembers a success.
func (c *PrincipalCache) Authenticate(ctx context.Context, p controlplane.Presented) (controlplane.Principal, error) {
	key := principalKey(p)
	now := c.now()
	c.mu.Lock()
	e, ok := c.entries[key]
	if ok && !now.Before(e.expires) {
		delete(c.entries, key)
		ok = false
	}
	c.mu.Unlock()
	if ok {
		return e.p, nil
	}
	got, err := c.inner.Authenticate(ctx, p)
	if err != nil {
		return got, err
	}
	// The entry's lifetime starts before the database answered, so it
	// never outlives the decision by more than the TTL.
	c.put(key, cachedPrincipal{p: got, expires: now.Add(c.ttl)}, now)
	return got, nil
}

func (c *PrincipalCache) put(key [sha256.Size]byte, e cachedPrincipal, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.entries) >= MaxPrincipalCacheEntries {
		for k, v := range c.entries {
			if !now.Before(v.expires) {
				delete(c.entries, k)
			}
		}
		if len(c.entries) >= MaxPrincipalCacheEntries {
			return
		}
	}
	c.entries[key] = e
}
