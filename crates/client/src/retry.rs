//! [`RetryPolicy`]: what the [`Client`](super::Client) does with each response it receives —
//! accept it, resend it, or turn it into an error. Pure decisions, no I/O.
//!
//! Contract — the client resends a request on its own in exactly two cases:
//! - **401 with a refreshable credential** (exec plugin, token file): the cached credential is
//!   stale; drop it and resend, once. A second 401 is the answer.
//! - **429 or 5xx carrying `Retry-After`** (client-go's `checkWait`): the server did not process
//!   the request and said when to come back, so resending is safe for every verb, after that
//!   wait, at most [`MAX_RETRY_AFTER_RETRIES`] times (client-go's limit). Each wait is clamped
//!   to [`MAX_RETRY_AFTER_WAIT`]: client-go caps nothing here, but the wait is slept outside the
//!   per-request timeout, and one bad header must not park a worker for a day.
//!
//! Everything else — conflicts, 410s, 5xx without `Retry-After`, transport errors — is returned
//! to the caller, who knows whether the request may be repeated (`Error::is_retryable`).

use std::time::Duration;

use http::header::{HeaderMap, RETRY_AFTER};
use http::StatusCode;

/// How many times a request answered with `Retry-After` is sent again (client-go's limit).
pub const MAX_RETRY_AFTER_RETRIES: u32 = 10;

/// The longest a single `Retry-After` wait may be; a server asking for more waits this long.
/// Together with [`MAX_RETRY_AFTER_RETRIES`] it bounds what one request can spend waiting
/// (10 min).
pub const MAX_RETRY_AFTER_WAIT: Duration = Duration::from_secs(60);

/// What to do with one response.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// A success: hand it to the caller.
    Accept,
    /// Invalidate the credential, then send again.
    RefreshCredentials,
    /// Sleep this long, then send again.
    WaitAndResend(Duration),
    /// Turn the response into an error.
    Fail,
}

/// The retry state of one request.
#[derive(Clone, Debug, Default)]
pub struct RetryPolicy {
    credentials_refreshed: bool,
    waits: u32,
}

impl RetryPolicy {
    /// Decides what to do with a response of `status` and `headers`, given whether the
    /// credential can be refreshed, and records the retry it chooses.
    pub fn next_step(
        &mut self,
        status: StatusCode,
        headers: &HeaderMap,
        credentials_can_refresh: bool,
    ) -> Step {
        if status.is_success() {
            return Step::Accept;
        }
        if status == StatusCode::UNAUTHORIZED
            && credentials_can_refresh
            && !self.credentials_refreshed
        {
            self.credentials_refreshed = true;
            return Step::RefreshCredentials;
        }
        match requested_wait(status, headers) {
            Some(wait) if self.waits < MAX_RETRY_AFTER_RETRIES => {
                self.waits += 1;
                Step::WaitAndResend(wait)
            }
            _ => Step::Fail,
        }
    }
}

/// The wait a 429 or 5xx response asks for in `Retry-After` (seconds; the API server never
/// sends the HTTP-date form, which is ignored), at most [`MAX_RETRY_AFTER_WAIT`].
fn requested_wait(status: StatusCode, headers: &HeaderMap) -> Option<Duration> {
    if status != StatusCode::TOO_MANY_REQUESTS && !status.is_server_error() {
        return None;
    }
    let seconds = headers.get(RETRY_AFTER)?.to_str().ok()?;
    let asked = Duration::from_secs(seconds.trim().parse::<u64>().ok()?);
    Some(asked.min(MAX_RETRY_AFTER_WAIT))
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    fn retry_after(seconds: &'static str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(RETRY_AFTER, HeaderValue::from_static(seconds));
        headers
    }

    #[test]
    fn a_401_refreshes_refreshable_credentials_once() {
        let none = HeaderMap::new();
        let mut policy = RetryPolicy::default();
        assert_eq!(
            policy.next_step(StatusCode::UNAUTHORIZED, &none, true),
            Step::RefreshCredentials
        );
        assert_eq!(
            policy.next_step(StatusCode::UNAUTHORIZED, &none, true),
            Step::Fail
        );
        let mut static_token = RetryPolicy::default();
        assert_eq!(
            static_token.next_step(StatusCode::UNAUTHORIZED, &none, false),
            Step::Fail
        );
    }

    #[test]
    fn retry_after_is_honoured_on_429_and_5xx_up_to_the_limit() {
        let mut policy = RetryPolicy::default();
        for _ in 0..MAX_RETRY_AFTER_RETRIES {
            assert_eq!(
                policy.next_step(StatusCode::TOO_MANY_REQUESTS, &retry_after("2"), false),
                Step::WaitAndResend(Duration::from_secs(2))
            );
        }
        assert_eq!(
            policy.next_step(StatusCode::TOO_MANY_REQUESTS, &retry_after("2"), false),
            Step::Fail
        );
        let mut policy = RetryPolicy::default();
        assert_eq!(
            policy.next_step(StatusCode::SERVICE_UNAVAILABLE, &retry_after(" 1 "), false),
            Step::WaitAndResend(Duration::from_secs(1))
        );
    }

    #[test]
    fn a_retry_after_longer_than_a_minute_waits_a_minute() {
        let mut policy = RetryPolicy::default();
        assert_eq!(
            policy.next_step(StatusCode::TOO_MANY_REQUESTS, &retry_after("86400"), false),
            Step::WaitAndResend(MAX_RETRY_AFTER_WAIT)
        );
        assert_eq!(
            policy.next_step(StatusCode::SERVICE_UNAVAILABLE, &retry_after("60"), false),
            Step::WaitAndResend(Duration::from_secs(60))
        );
        // Larger than any u64 does not parse: not a wait the server can mean.
        assert_eq!(
            policy.next_step(
                StatusCode::TOO_MANY_REQUESTS,
                &retry_after("99999999999999999999999"),
                false
            ),
            Step::Fail
        );
    }

    #[test]
    fn other_errors_fail_at_once() {
        let mut policy = RetryPolicy::default();
        for status in [
            StatusCode::CONFLICT,
            StatusCode::GONE,
            StatusCode::NOT_FOUND,
            StatusCode::INTERNAL_SERVER_ERROR,
        ] {
            assert_eq!(
                policy.next_step(status, &HeaderMap::new(), true),
                Step::Fail
            );
        }
        // Retry-After on a 4xx other than 429 is not an invitation, nor is a date.
        assert_eq!(
            policy.next_step(StatusCode::CONFLICT, &retry_after("1"), false),
            Step::Fail
        );
        assert_eq!(
            policy.next_step(
                StatusCode::TOO_MANY_REQUESTS,
                &retry_after("Wed, 21 Oct 2026 07:28:00 GMT"),
                false
            ),
            Step::Fail
        );
        assert_eq!(
            policy.next_step(StatusCode::OK, &HeaderMap::new(), false),
            Step::Accept
        );
    }
}
