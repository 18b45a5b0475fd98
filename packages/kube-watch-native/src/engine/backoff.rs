//! When a run tries again after a failure.
//!
//! Exponential from `initialSeconds` to `maxSeconds` with full jitter (a uniform draw between
//! nothing and the step's cap, so a thousand informers that lost the same API server do not
//! come back in step), reset once a watch has been healthy for a minute. A server's
//! `Retry-After` (or a Status' `details.retryAfterSeconds`) wins when it is longer. A watch
//! that ends at once without an event counts as a failure, so a server that accepts and
//! immediately closes watches never drives a tight loop.
//!
//! Pure: the caller passes the time and the random draw, so tests replay exact schedules.

use std::time::{Duration, Instant};

use thiserror::Error;

/// A watch must have run this long for the failure count to start over.
pub const HEALTHY_AFTER: Duration = Duration::from_secs(60);

/// A watch that ends sooner than this without an event failed, whatever its status said.
pub const QUICK_END: Duration = Duration::from_secs(1);

/// No wait is shorter than this share of `initialSeconds`, however small the draw: full
/// jitter's draws near zero would otherwise let a run of unlucky draws retry at once.
const MIN_SHARE_OF_INITIAL: f64 = 0.1;

/// A server may ask for at most this long a pause; longer asks are taken as this.
pub const MAX_RETRY_AFTER: Duration = Duration::from_secs(600);

/// A backoff option out of range.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum BackoffError {
    /// Not a finite number above zero.
    #[error("backoff.{field} must be a finite number of seconds above 0 (got {value})")]
    NotPositive {
        /// `initialSeconds` or `maxSeconds`.
        field: &'static str,
        /// What was given.
        value: f64,
    },
    /// `initialSeconds` above `maxSeconds`.
    #[error("backoff.initialSeconds ({initial}) must not exceed backoff.maxSeconds ({max})")]
    InitialAboveMax {
        /// `initialSeconds`.
        initial: f64,
        /// `maxSeconds`.
        max: f64,
    },
}

/// The `backoff` option.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BackoffPolicy {
    initial: f64,
    max: f64,
}

impl Default for BackoffPolicy {
    /// `{ initialSeconds: 0.8, maxSeconds: 30 }`.
    fn default() -> Self {
        Self {
            initial: 0.8,
            max: 30.0,
        }
    }
}

impl BackoffPolicy {
    /// The policy for `backoff: { initialSeconds, maxSeconds }`.
    pub fn new(initial_seconds: f64, max_seconds: f64) -> Result<Self, BackoffError> {
        for (field, value) in [
            ("initialSeconds", initial_seconds),
            ("maxSeconds", max_seconds),
        ] {
            if !value.is_finite() || value <= 0.0 {
                return Err(BackoffError::NotPositive { field, value });
            }
        }
        if initial_seconds > max_seconds {
            return Err(BackoffError::InitialAboveMax {
                initial: initial_seconds,
                max: max_seconds,
            });
        }
        Ok(Self {
            initial: initial_seconds,
            max: max_seconds,
        })
    }

    /// The cap of the `step`th consecutive failure (0-based): `initial · 2^step`, at most `max`.
    pub fn cap(&self, step: u32) -> Duration {
        let seconds = self.initial * 2f64.powi(step.min(64) as i32);
        Duration::from_secs_f64(seconds.min(self.max))
    }
}

/// One informer's backoff state.
#[derive(Debug, Clone)]
pub struct Backoff {
    policy: BackoffPolicy,
    /// Consecutive failures since the last healthy minute.
    failures: u32,
    /// When the current watch started streaming.
    watching_since: Option<Instant>,
}

impl Backoff {
    /// No failures yet.
    pub fn new(policy: BackoffPolicy) -> Self {
        Self {
            policy,
            failures: 0,
            watching_since: None,
        }
    }

    /// Consecutive failures counted so far: the current backoff step.
    pub fn failures(&self) -> u32 {
        self.failures
    }

    /// A watch started streaming at `now`.
    pub fn watching(&mut self, now: Instant) {
        self.watching_since = Some(now);
    }

    /// A watch that ran for a healthy minute wipes the slate before the next failure counts.
    fn settle(&mut self, now: Instant) {
        if let Some(since) = self.watching_since.take()
            && now.saturating_duration_since(since) >= HEALTHY_AFTER
        {
            self.failures = 0;
        }
    }

    /// A request or watch failed at `now`: how long to wait before the next try. `random` is
    /// a draw from `[0, 1)`; `retry_after` is what the server asked for, if anything.
    pub fn failed(&mut self, now: Instant, retry_after: Option<Duration>, random: f64) -> Duration {
        self.settle(now);
        let cap = self.policy.cap(self.failures);
        self.failures = self.failures.saturating_add(1);
        let floor = Duration::from_secs_f64(self.policy.initial * MIN_SHARE_OF_INITIAL);
        let jittered = cap.mul_f64(random.clamp(0.0, 1.0)).max(floor);
        match retry_after {
            Some(asked) => jittered.max(asked.min(MAX_RETRY_AFTER)),
            None => jittered,
        }
    }

    /// A watch ended cleanly at `now` (the server's `timeoutSeconds`): `None` to reconnect at
    /// once, or the wait when it ended so soon without an event that it counts as a failure.
    pub fn ended(&mut self, now: Instant, saw_events: bool, random: f64) -> Option<Duration> {
        let quick = self
            .watching_since
            .is_none_or(|since| now.saturating_duration_since(since) < QUICK_END);
        if quick && !saw_events {
            return Some(self.failed(now, None, random));
        }
        self.settle(now);
        None
    }
}

/// The delay of a `Retry-After` header: delta-seconds (the form API servers send). An HTTP
/// date or anything else is ignored, and the ordinary backoff applies.
pub fn parse_retry_after(header: &str) -> Option<Duration> {
    let seconds: u64 = header.trim().parse().ok()?;
    Some(Duration::from_secs(seconds))
}

/// A small seedable generator (SplitMix64) for the jitter draws; not for anything secret.
#[derive(Debug, Clone)]
pub struct Jitter(u64);

impl Jitter {
    /// A generator seeded with `seed`.
    pub fn new(seed: u64) -> Self {
        Self(seed)
    }

    /// A generator seeded from the clock, so informers started together draw differently.
    pub fn from_time() -> Self {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0);
        // Mixing in an address separates informers created in the same nanosecond.
        let local = 0u8;
        Self::new(nanos ^ (&local as *const u8 as u64).rotate_left(32))
    }

    /// A draw from `[0, 1)`.
    pub fn draw(&mut self) -> f64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^= z >> 31;
        (z >> 11) as f64 / (1u64 << 53) as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secs(d: Duration) -> f64 {
        (d.as_secs_f64() * 1000.0).round() / 1000.0
    }

    #[test]
    fn caps_double_from_initial_to_max() {
        let policy = BackoffPolicy::default();
        let caps: Vec<f64> = (0..8).map(|s| secs(policy.cap(s))).collect();
        assert_eq!(caps, [0.8, 1.6, 3.2, 6.4, 12.8, 25.6, 30.0, 30.0]);
        assert_eq!(secs(policy.cap(u32::MAX)), 30.0, "no overflow");
    }

    #[test]
    fn full_jitter_scales_each_steps_cap_by_the_draw() {
        let mut backoff = Backoff::new(BackoffPolicy::default());
        let now = Instant::now();
        let waits: Vec<f64> = [1.0, 0.5, 0.25, 0.999_999]
            .iter()
            .map(|r| secs(backoff.failed(now, None, *r)))
            .collect();
        assert_eq!(waits, [0.8, 0.8, 0.8, 6.4]);
        assert_eq!(backoff.failures(), 4);
        // A draw of zero still waits a tenth of initialSeconds: never a tight loop.
        assert_eq!(secs(backoff.failed(now, None, 0.0)), 0.08);
    }

    #[test]
    fn a_healthy_minute_resets_the_steps_and_a_shorter_watch_does_not() {
        let mut backoff = Backoff::new(BackoffPolicy::default());
        let t0 = Instant::now();
        for _ in 0..5 {
            backoff.failed(t0, None, 1.0);
        }
        backoff.watching(t0);
        assert_eq!(
            secs(backoff.failed(t0 + Duration::from_secs(59), None, 1.0)),
            25.6,
            "59 s of watching is not yet healthy"
        );
        let t1 = t0 + Duration::from_secs(100);
        backoff.watching(t1);
        assert_eq!(
            secs(backoff.failed(t1 + HEALTHY_AFTER, None, 1.0)),
            0.8,
            "a healthy minute starts over"
        );
        assert_eq!(backoff.failures(), 1);
    }

    #[test]
    fn retry_after_wins_only_when_longer() {
        let mut backoff = Backoff::new(BackoffPolicy::default());
        let now = Instant::now();
        assert_eq!(
            secs(backoff.failed(now, Some(Duration::from_secs(5)), 1.0)),
            5.0
        );
        for _ in 0..6 {
            backoff.failed(now, None, 1.0);
        }
        assert_eq!(
            secs(backoff.failed(now, Some(Duration::from_secs(2)), 1.0)),
            30.0,
            "the longer backoff wins"
        );
        assert_eq!(
            backoff.failed(now, Some(Duration::from_secs(86_400)), 1.0),
            MAX_RETRY_AFTER,
            "an absurd ask is bounded"
        );
    }

    #[test]
    fn a_watch_that_ends_at_once_without_events_is_a_failure() {
        let mut backoff = Backoff::new(BackoffPolicy::default());
        let t0 = Instant::now();
        backoff.watching(t0);
        assert_eq!(
            backoff
                .ended(t0 + Duration::from_millis(10), false, 1.0)
                .map(secs),
            Some(0.8)
        );
        backoff.watching(t0);
        assert_eq!(
            backoff
                .ended(t0 + Duration::from_millis(10), false, 1.0)
                .map(secs),
            Some(1.6),
            "and such failures add up"
        );
        backoff.watching(t0);
        assert_eq!(
            backoff.ended(t0 + Duration::from_millis(10), true, 1.0),
            None,
            "a quick end after events is a normal end"
        );
        backoff.watching(t0);
        assert_eq!(backoff.ended(t0 + Duration::from_secs(5), false, 1.0), None);
        assert_eq!(
            backoff.ended(t0, false, 1.0).map(secs),
            Some(3.2),
            "an end without a watch is a failure"
        );
        backoff.watching(t0);
        assert_eq!(backoff.ended(t0 + HEALTHY_AFTER, false, 1.0), None);
        assert_eq!(
            backoff.failures(),
            0,
            "a healthy minute then a clean end resets"
        );
    }

    #[test]
    fn the_policy_refuses_nonsense() {
        assert!(BackoffPolicy::new(0.8, 30.0).is_ok());
        let message = |i, m| BackoffPolicy::new(i, m).unwrap_err().to_string();
        assert!(message(0.0, 30.0).contains("backoff.initialSeconds must be a finite number"));
        assert!(message(1.0, f64::NAN).contains("backoff.maxSeconds"));
        assert!(message(1.0, f64::INFINITY).contains("backoff.maxSeconds"));
        assert!(message(-1.0, 3.0).contains("got -1"));
        assert!(message(5.0, 3.0).contains("must not exceed"));
        let custom = BackoffPolicy::new(0.1, 0.4).unwrap();
        let caps: Vec<f64> = (0..4).map(|s| secs(custom.cap(s))).collect();
        assert_eq!(caps, [0.1, 0.2, 0.4, 0.4]);
    }

    #[test]
    fn retry_after_headers_in_seconds() {
        assert_eq!(parse_retry_after(" 3 "), Some(Duration::from_secs(3)));
        assert_eq!(parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT"), None);
        assert_eq!(parse_retry_after("-1"), None);
    }

    #[test]
    fn jitter_draws_are_uniform_enough_and_replayable() {
        let mut a = Jitter::new(7);
        let mut b = Jitter::new(7);
        let draws: Vec<f64> = (0..10_000).map(|_| a.draw()).collect();
        assert!(draws.iter().all(|d| (0.0..1.0).contains(d)));
        let mean = draws.iter().sum::<f64>() / draws.len() as f64;
        assert!((mean - 0.5).abs() < 0.02, "mean {mean}");
        assert_eq!(draws[0], b.draw());
        assert_ne!(Jitter::new(8).draw(), draws[0]);
    }
}
