//! [`watch_outages`]: the task that says when the API server stopped answering and when it
//! answers again — once per outage, at default verbosity — and that looks for its return twice
//! a second while it is away, so that everything waiting for it resumes within a second.
//!
//! Contract:
//! - An outage begins when an attempt finds the server unavailable
//!   ([`ServerAvailability`](super::ServerAvailability)). If it lasts [`REPORT_AFTER`], one
//!   Warning says so, with how the first attempt failed; when it ends after that Warning, one
//!   Info says how long it lasted. Shorter blips are logged at debug.
//! - While it lasts, `GET /readyz` every [`PROBE_INTERVAL`]. A 200 is recorded as the server's
//!   answer: the return that parked keys and backing-off reflectors wait for. Any other outcome
//!   is not recorded at all — `/readyz` answers 500 while etcd is down (exchange 81) and for a
//!   second or so after a restart (exchange 85), when the server answers but cannot yet do the
//!   work — so a failing probe neither ends an outage nor prolongs one: the next answered
//!   request of any kind (a deletion, a reflector's list) ends it all the same.
//! - `/readyz` is readable by every user (the `system:public-info-viewer` role); where it is
//!   not, the probes change nothing and the return is seen by the next request that is answered.
//! - Ends when `stop` is cancelled.

use std::time::Duration;

use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::observer::AttemptResult;
use super::request::ApiRequest;
use super::resource_ref::push_segments;
use super::transport::Client;

/// How long an outage lasts before it is reported at default verbosity.
pub const REPORT_AFTER: Duration = Duration::from_secs(1);

/// How often `/readyz` is asked during an outage (and how often a controller sends one of its
/// waiting keys as a probe). Half a second, so that work resumes within a second of the return.
pub const PROBE_INTERVAL: Duration = Duration::from_millis(500);

/// How a failed attempt failed, for the logs.
pub fn describe_failure(failure: Option<AttemptResult>) -> String {
    match failure {
        Some(AttemptResult::Status(code)) => format!("HTTP {code}"),
        Some(AttemptResult::TransportError) | None => {
            "no answer (connection refused, broken or timed out)".to_owned()
        }
    }
}

/// Watches the availability of `client`'s server until `stop` (see the module docs).
pub async fn watch_outages(client: Client, stop: CancellationToken) {
    let mut changes = client.availability().subscribe();
    loop {
        let began = tokio::select! {
            () = stop.cancelled() => return,
            down = async { changes.wait_for(|now| !now.answering).await.map(|now| *now) } => {
                match down {
                    Ok(now) => now,
                    Err(_) => return,
                }
            }
        };
        let since = began.unavailable_since.unwrap_or_else(Instant::now);
        let mut reported = false;
        let mut next_probe = Instant::now() + PROBE_INTERVAL;
        loop {
            tokio::select! {
                () = stop.cancelled() => return,
                back = async { changes.wait_for(|now| now.answering).await.is_ok() } => {
                    if !back {
                        return;
                    }
                    break;
                }
                () = tokio::time::sleep_until(next_probe) => {
                    if !reported && since.elapsed() >= REPORT_AFTER {
                        reported = true;
                        tracing::warn!(
                            seconds = since.elapsed().as_secs_f64(),
                            failure = %describe_failure(began.failure),
                            "the API server is unavailable; waiting for it to answer again"
                        );
                    }
                    tokio::select! {
                        () = stop.cancelled() => return,
                        () = probe_readyz(&client) => {}
                    }
                    next_probe = Instant::now() + PROBE_INTERVAL;
                }
            }
        }
        let lasted = client.availability().current().last_outage.as_secs_f64();
        if reported {
            tracing::info!(seconds = lasted, "the API server answers again");
        } else {
            tracing::debug!(seconds = lasted, "the API server answers again");
        }
    }
}

/// Asks `/readyz`; records the server as answering if it says it is ready.
async fn probe_readyz(client: &Client) {
    let mut url = client.server().clone();
    push_segments(&mut url, &["readyz"]);
    let probe = ApiRequest::get(url)
        .with_accept("text/plain")
        .health_probe();
    match client.send(&probe).await {
        Ok(response) if response.status().as_u16() == 200 => {
            client.availability().record(AttemptResult::Status(200));
        }
        Ok(response) => {
            tracing::debug!(status = response.status().as_u16(), "/readyz: not ready")
        }
        Err(error) => tracing::debug!(err = %error, "/readyz: no answer"),
    }
}
