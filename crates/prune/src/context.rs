//! When a pass runs, and what that means for the provider's prompt cache.

use std::time::Duration;

/// Why a pass runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PassKind {
    /// Between turns, while the provider's prompt cache may still hold the
    /// history. A rewrite changes the prompt from its position on, so the
    /// cache guard limits rewrites to the recent tail unless the cache has
    /// expired anyway.
    PerTurn,
    /// Part of a compaction (threshold, overflow, manual): the prompt is
    /// about to change anyway, so the cache guard does not apply.
    #[default]
    Compaction,
}

/// What the caller knows about the moment of the pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PassContext {
    /// Why the pass runs.
    pub kind: PassKind,
    /// How long the session has been idle (since the last request), if
    /// known.
    pub idle: Option<Duration>,
    /// How long the provider keeps a prompt cache entry, if known.
    pub cache_ttl: Option<Duration>,
}

impl PassContext {
    /// A compaction pass: every rule applies, the cache is not considered.
    pub fn compaction() -> Self {
        PassContext {
            kind: PassKind::Compaction,
            idle: None,
            cache_ttl: None,
        }
    }

    /// A pass between turns, after `idle` of inactivity, for a provider
    /// whose cache lives `cache_ttl`.
    pub fn per_turn(idle: Option<Duration>, cache_ttl: Option<Duration>) -> Self {
        PassContext {
            kind: PassKind::PerTurn,
            idle,
            cache_ttl,
        }
    }

    /// True when the provider's cache has surely expired: idle strictly
    /// longer than its lifetime.
    pub fn cache_cold(&self) -> bool {
        matches!((self.idle, self.cache_ttl), (Some(idle), Some(ttl)) if idle > ttl)
    }

    /// May a result followed by `tokens_after` tokens be rewritten, given
    /// the guard `tail_limit`? Always for compactions and cold caches;
    /// otherwise only when at most `tail_limit` tokens follow it (that much
    /// is re-sent uncached anyway, so the loss is small).
    pub fn allows(&self, tokens_after: u64, tail_limit: u64) -> bool {
        self.kind == PassKind::Compaction || self.cache_cold() || tokens_after <= tail_limit
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn guard_at_below_and_above_the_tail_limit() {
        let warm = PassContext::per_turn(None, None);
        assert!(warm.allows(7999, 8000));
        assert!(warm.allows(8000, 8000));
        assert!(!warm.allows(8001, 8000));
        assert!(PassContext::compaction().allows(1_000_000, 8000));
    }

    #[test]
    fn guard_lifts_only_when_idle_exceeds_the_cache_lifetime() {
        let ttl = Some(Duration::from_secs(300));
        let at = PassContext::per_turn(Some(Duration::from_secs(300)), ttl);
        let below = PassContext::per_turn(Some(Duration::from_secs(299)), ttl);
        let above = PassContext::per_turn(Some(Duration::from_secs(301)), ttl);
        assert!(!at.allows(9000, 8000));
        assert!(!below.allows(9000, 8000));
        assert!(above.allows(9000, 8000));
        assert!(!PassContext::per_turn(Some(Duration::from_secs(301)), None).allows(9000, 8000));
    }
}
