//! [`FineTimer`]: the timer task's sleep, accurate to tens of microseconds instead of tokio's
//! milliseconds.
//!
//! tokio's timer wheel counts whole milliseconds. A sleep until `t` is filed under the next
//! millisecond tick after `t`, and the runtime parks for a whole number of milliseconds counted
//! from a clock reading truncated to the millisecond, so the sleep ends 0–2 ms after `t`. For the
//! workqueue that would make every delayed key up to 2 ms late (measured: p50 0.6 ms, p99
//! 1.4–2.3 ms on an idle machine; kube-gc's `docs/performance.md`), where the target is p99
//! under 1 ms.
//!
//! [`FineTimer::sleep_until`] therefore sleeps in two stages:
//!
//! 1. **Coarse**: tokio's sleep until [`COARSE_MARGIN`] before the deadline. It costs one entry in
//!    tokio's wheel however long the wait, and tokio is at most about 2 ms late, so it ends at the
//!    latest around the deadline.
//! 2. **Fine**: for what is left, a Linux `timerfd` registered with tokio's I/O driver. The
//!    kernel's high-resolution timer makes the runtime's `epoll_wait` return as soon as it
//!    expires, and the timer task runs tens of microseconds after the deadline.
//!
//! Time is still tokio's. The queue decides what is due by `tokio::time::Instant::now()`; the
//! fine stage only wakes the task. Under tokio's paused clock (the tests) the two clocks differ,
//! so the fine stage races tokio's own sleep until the deadline: with a paused clock tokio's wins
//! (it auto-advances), and a fine wake-up that comes before tokio's clock reaches the deadline is
//! followed by tokio's sleep. The wait never ends early by tokio's clock, and never spins.
//!
//! Where there is no `timerfd` (other systems), or the queue was built with fine timers off
//! (needed on a runtime without tokio's I/O driver), both stages are tokio's and the queue is
//! simply as punctual as tokio.
//!
//! *Over the reference* (`reference.rs`, which has no clock: its caller passes `now`): this is
//! how the fast queue's timer task keeps the reference's promise of releasing a key at its ready
//! time, to tens of microseconds rather than tokio's 0–2 ms.

use std::time::Duration;
use tokio::time::Instant;

/// How long before the deadline the coarse stage ends: tokio's sleep wakes up to 2 ms late.
const COARSE_MARGIN: Duration = Duration::from_millis(2);

/// A sleep precise to tens of microseconds where the platform allows; see the module
/// documentation. One per timer task.
pub(super) struct FineTimer {
    timerfd: Option<timerfd::TimerFd>,
}

impl FineTimer {
    /// A timer with a fine stage if this platform offers one.
    ///
    /// # Panics
    ///
    /// Where a timerfd exists (Linux), on a Tokio runtime built without its I/O driver (tokio
    /// panics asking for `enable_io`). Use [`FineTimer::coarse`] there.
    pub(super) fn new() -> Self {
        let timerfd = match timerfd::TimerFd::new() {
            Ok(timerfd) => Some(timerfd),
            Err(error) => {
                tracing::debug!(%error, "no timerfd; the workqueue's timers have tokio's 1 ms resolution");
                None
            }
        };
        FineTimer { timerfd }
    }

    /// A timer that is tokio's sleep alone (1 ms resolution).
    pub(super) fn coarse() -> Self {
        FineTimer { timerfd: None }
    }

    /// Sleeps until `at` by tokio's clock.
    pub(super) async fn sleep_until(&mut self, at: Instant) {
        let Some(timerfd) = &mut self.timerfd else {
            return tokio::time::sleep_until(at).await;
        };
        if let Some(coarse_end) = at.checked_sub(COARSE_MARGIN) {
            // An elapsed deadline would still wait for tokio's next tick: skip it instead.
            if Instant::now() < coarse_end {
                tokio::time::sleep_until(coarse_end).await;
            }
        }
        let left = at.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return;
        }
        let fine = tokio::select! {
            fine = timerfd.sleep(left) => fine,
            () = tokio::time::sleep_until(at) => return,
        };
        if let Err(error) = fine {
            tracing::warn!(%error, "the workqueue's timerfd failed; falling back to tokio's 1 ms timers");
            self.timerfd = None;
        }
        // Woken by the OS clock: under a paused tokio clock the deadline may not have come yet.
        if Instant::now() < at {
            tokio::time::sleep_until(at).await;
        }
    }
}

#[cfg(target_os = "linux")]
mod timerfd {
    use rustix::time::{
        timerfd_create, timerfd_settime, Itimerspec, TimerfdClockId, TimerfdFlags,
        TimerfdTimerFlags, Timespec,
    };
    use std::io;
    use std::os::fd::OwnedFd;
    use std::time::Duration;
    use tokio::io::unix::AsyncFd;
    use tokio::io::Interest;

    /// A one-shot `timerfd` on `CLOCK_MONOTONIC` (the clock `Instant` reads), watched by tokio's
    /// I/O driver.
    pub(super) struct TimerFd {
        fd: AsyncFd<OwnedFd>,
    }

    impl TimerFd {
        /// Fails if the system refuses a timerfd or the runtime has no I/O driver.
        pub(super) fn new() -> io::Result<Self> {
            let fd = timerfd_create(
                TimerfdClockId::Monotonic,
                TimerfdFlags::NONBLOCK | TimerfdFlags::CLOEXEC,
            )?;
            // SAFETY: an `OwnedFd` is a valid, open descriptor that stays open, and keeps
            // returning that same descriptor, for as long as it lives, which is as long as the
            // `AsyncFd` that owns it: the whole of `register_with_interest`'s contract.
            let fd = unsafe { AsyncFd::register_with_interest(fd, Interest::READABLE) }
                .map_err(io::Error::from)?;
            Ok(TimerFd { fd })
        }

        /// Sleeps for `duration`, which must not be zero (a zero time disarms a timerfd).
        ///
        /// Cancel-safe: a timer left armed by a dropped sleep is re-armed by the next one, and
        /// arming resets the expiry count, so its late expiry reads as "would block" and is
        /// ignored.
        pub(super) async fn sleep(&mut self, duration: Duration) -> io::Result<()> {
            let expiry = Itimerspec {
                it_interval: Timespec {
                    tv_sec: 0,
                    tv_nsec: 0,
                },
                it_value: Timespec::try_from(duration)
                    .map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?,
            };
            timerfd_settime(self.fd.get_ref(), TimerfdTimerFlags::empty(), &expiry)?;
            loop {
                let mut ready = self.fd.readable().await?;
                let mut expirations = [0u8; 8];
                let read = ready.try_io(|fd| {
                    rustix::io::read(fd.get_ref(), &mut expirations).map_err(io::Error::from)
                });
                match read {
                    Ok(result) => return result.map(drop),
                    Err(_would_block) => continue,
                }
            }
        }
    }
}

#[cfg(not(target_os = "linux"))]
mod timerfd {
    use std::io;
    use std::time::Duration;

    /// No timerfd here: [`TimerFd::new`] always fails, so sleeps are tokio's.
    pub(super) struct TimerFd;

    impl TimerFd {
        pub(super) fn new() -> io::Result<Self> {
            Err(io::ErrorKind::Unsupported.into())
        }

        pub(super) async fn sleep(&mut self, _duration: Duration) -> io::Result<()> {
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn under_a_paused_clock_it_ends_at_the_deadline_not_before() {
        let mut timer = FineTimer::new();
        let start = Instant::now();
        for wait in [1, 2, 3, 50, 1_999, 2_000, 2_001, 5_000] {
            let at = Instant::now() + Duration::from_micros(wait);
            timer.sleep_until(at).await;
            assert!(Instant::now() >= at, "a {wait} µs wait ended early");
            // A paused clock advances by tokio's whole-millisecond ticks.
            let late = Instant::now() - at;
            assert!(
                late < Duration::from_millis(1),
                "a {wait} µs wait ended {late:?} late"
            );
        }
        assert!(start.elapsed() > Duration::from_millis(5));
    }

    /// The OS timer itself, without real waiting: a 1 ns timer expires at once, and one left
    /// armed for an hour by a dropped sleep neither blocks nor confuses the next.
    #[cfg(target_os = "linux")]
    #[tokio::test]
    async fn the_timerfd_wakes_the_task_and_is_cancel_safe() {
        let mut timerfd = timerfd::TimerFd::new().expect("Linux has timerfd");
        timerfd
            .sleep(Duration::from_nanos(1))
            .await
            .expect("a 1 ns timerfd sleep");
        {
            let hour = std::pin::pin!(timerfd.sleep(Duration::from_secs(3600)));
            assert!(poll_once(hour).await.is_none(), "an hour has not passed");
        }
        timerfd
            .sleep(Duration::from_nanos(1))
            .await
            .expect("re-armed after a dropped sleep");
        assert!(FineTimer::new().timerfd.is_some());
    }

    /// Polls `future` once; `None` if it is still pending (then drops it).
    #[cfg(target_os = "linux")]
    async fn poll_once<F: std::future::Future + Unpin>(mut future: F) -> Option<F::Output> {
        std::future::poll_fn(|cx| {
            std::task::Poll::Ready(match std::pin::Pin::new(&mut future).poll(cx) {
                std::task::Poll::Ready(output) => Some(output),
                std::task::Poll::Pending => None,
            })
        })
        .await
    }

    #[tokio::test(start_paused = true)]
    async fn a_dropped_sleep_does_not_disturb_the_next() {
        let mut timer = FineTimer::new();
        let at = Instant::now() + Duration::from_millis(10);
        // Dropped while in its fine stage, its timerfd still armed.
        let _ = tokio::time::timeout(Duration::from_micros(9_500), timer.sleep_until(at)).await;
        let next = Instant::now() + Duration::from_millis(3);
        timer.sleep_until(next).await;
        assert_eq!(Instant::now(), next);
    }
}
