//! Bringing a CUDA device back: each try makes a fresh context and runs the probe on a thread of
//! its own, while the owner thread waits for it a short while only ([`REOPEN_WAIT`]) and takes a
//! late answer at its next try. A try the driver never answers is given up after
//! [`REOPEN_GIVE_UP`] and another started, at most [`MOST_ABANDONED`] times: each holds a thread
//! stuck in the driver, so past that the device stays out of service and says to restart. Owns
//! the tries; letting the old context go is `live`'s.

use std::sync::mpsc;
use std::time::{Duration, Instant};

use super::Setup;
use super::live::{Live, open_failure};

/// How long the owner thread waits for a try at each step.
pub const REOPEN_WAIT: Duration = Duration::from_secs(2);
/// How long a try may go unanswered before it is given up and another started.
pub const REOPEN_GIVE_UP: Duration = Duration::from_secs(30);
/// Tries given up, each still holding a thread in the driver, before no more are started.
pub const MOST_ABANDONED: usize = 3;

const STOPPED: &str = "the thread bringing the device back stopped";

/// One try: its answer, when it comes, and when it began.
struct Try {
    answer: mpsc::Receiver<Result<Live, String>>,
    started: Instant,
}

/// The tries to bring one device back.
#[derive(Default)]
pub(super) struct Reopening {
    pending: Option<Try>,
    abandoned: usize,
}

impl Reopening {
    /// One step: the pending try's answer if it comes within [`REOPEN_WAIT`], starting a try
    /// first when none is pending (or the pending one is given up).
    pub(super) fn step(&mut self, setup: &Setup) -> Result<Live, String> {
        let attempt = match self.pending.take() {
            // An answer that came since the last step is taken, however late.
            Some(attempt) => match attempt.answer.try_recv() {
                Ok(answer) => return answer,
                Err(mpsc::TryRecvError::Disconnected) => return Err(STOPPED.into()),
                Err(mpsc::TryRecvError::Empty) if attempt.started.elapsed() < REOPEN_GIVE_UP => attempt,
                Err(mpsc::TryRecvError::Empty) => {
                    self.abandon(attempt, setup);
                    self.start(setup)?
                }
            },
            None => self.start(setup)?,
        };
        match attempt.answer.recv_timeout(REOPEN_WAIT) {
            Ok(answer) => answer,
            Err(mpsc::RecvTimeoutError::Timeout) => {
                let waited = attempt.started.elapsed().as_secs();
                self.pending = Some(attempt);
                Err(format!(
                    "the driver has not yet made a fresh context that runs a probe ({waited} s so far; the old kernel may still hold the GPU): the try goes on, and is given up after {} s",
                    REOPEN_GIVE_UP.as_secs()
                ))
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => Err(STOPPED.into()),
        }
    }

    /// Gives a try up: it still holds a thread in the driver, and whatever it answers late is
    /// dropped on a thread of its own (a fresh context is never destroyed on the owner's).
    fn abandon(&mut self, attempt: Try, setup: &Setup) {
        self.abandoned += 1;
        tracing::warn!(
            device = %setup.id,
            "the driver did not make a fresh context within {} s: that try is given up ({} so far)",
            REOPEN_GIVE_UP.as_secs(),
            self.abandoned
        );
        let answer = attempt.answer;
        let _ = std::thread::Builder::new().name("xc-cuda late reopen".into()).spawn(move || drop(answer.recv()));
    }

    /// Starts a try on a thread of its own, unless too many are stuck already.
    fn start(&mut self, setup: &Setup) -> Result<Try, String> {
        if self.abandoned >= MOST_ABANDONED {
            return Err(format!(
                "the driver answered none of {} tries to make a fresh context, {} s each: restart the program (or xcd) to use this GPU again",
                self.abandoned,
                REOPEN_GIVE_UP.as_secs()
            ));
        }
        let (tx, answer) = mpsc::channel();
        let setup = setup.clone();
        std::thread::Builder::new()
            .name("xc-cuda reopen".into())
            .spawn(move || {
                let fresh = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    let live = Live::open(&setup)
                        .map_err(|e| format!("a fresh context could not be made ({})", open_failure(&setup.gpu, &e)))?;
                    let live = live.probe(&setup);
                    // The owner thread makes it current when it takes it; this thread ends.
                    super::context::clear_current();
                    live
                }))
                .unwrap_or_else(|panic| {
                    Err(format!("the driver wrapper panicked: {}", crate::panic_words(&*panic).unwrap_or_default()))
                });
                let _ = tx.send(fresh);
            })
            .map_err(|e| format!("no thread to bring the device back: {e}"))?;
        Ok(Try { answer, started: Instant::now() })
    }
}
