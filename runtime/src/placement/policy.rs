//! The placement policy of a run: where `XC_PAR=auto` leaves a choice, a placement remembered
//! for the block and size is used, else one is measured while the run computes and kept; the
//! chosen workers run the rest; and if they all fail, every other worker takes what they left.
//!
//! Owns [`Placements`], the placements read or measured so far (read through and written
//! through [`crate::home::Home`], never the file itself), and [`Run::place`]. How measuring works
//! is the parent module's; how a piece of work is cut into tiles is [`crate::schedule`]'s.

use parking_lot::Mutex;
use std::collections::HashMap;

use super::{Choice, Kinds, NotKept, key};
use crate::home::Home;
use crate::schedule::{Run, Work};

/// The placements a program has read or measured, by settings key, over its settings file.
pub(crate) struct Placements {
    home: Home,
    /// Whether this program measures placements at all (`XC_PAR=auto` with nothing pinned).
    measures: bool,
    cache: Mutex<HashMap<String, Kinds>>,
}

impl Placements {
    /// Placements kept in `home`'s settings file; none are measured unless `measures`.
    pub(crate) fn new(home: Home, measures: bool) -> Placements {
        Placements { home, measures, cache: Mutex::default() }
    }

    /// The remembered placement under `key`, if any.
    fn remembered(&self, key: &str) -> Option<Kinds> {
        let mut cache = self.cache.lock();
        if let Some(kinds) = cache.get(key) {
            return Some(*kinds);
        }
        let kinds = self.home.get(key).ok().flatten().and_then(|v| Kinds::parse(&v))?;
        cache.insert(key.to_owned(), kinds);
        Some(kinds)
    }

    /// Keeps a measured placement; says where, or why not.
    fn remember(&self, key: &str, kinds: Kinds) -> Result<String, NotKept> {
        self.cache.lock().insert(key.to_owned(), kinds);
        self.home.set(key, Some(&kinds.to_string())).map_err(|e| NotKept::Unwritten(std::sync::Arc::new(e)))?;
        Ok(self.home.path().display().to_string())
    }
}

impl Run<'_> {
    /// Chooses the run's workers (remembering or measuring a placement where `placements`
    /// leaves a choice) and runs `work` on them; whatever they leave when they fail runs on every
    /// other worker. Returns what is left (only when every worker failed) and how the choice was
    /// made.
    pub(crate) fn place<'a>(&mut self, placements: &Placements, mut work: Work<'a>) -> (Work<'a>, Option<Choice>) {
        let all: Vec<usize> = (0..self.workers().len()).collect();
        let present = self.kinds_of(&all);
        let (members, choice) = if placements.measures && present.len() > 1 {
            let (members, choice) = self.choose(placements, present, &mut work);
            (members, Some(choice))
        } else {
            (all.clone(), None)
        };
        self.prepare(&members);
        work = self.run_on(&members, work);
        if !work.is_empty() {
            // The chosen workers failed: the rest of the run goes to every other worker.
            self.prepare(&all);
            let live = self.members_of(Kinds::ALL);
            work = self.run_on(&live, work);
        }
        (work, choice)
    }

    /// The members a remembered placement names among the kinds `present`, or, with none, the
    /// best found by measuring on pieces of `work`.
    fn choose(&mut self, placements: &Placements, present: Kinds, work: &mut Work<'_>) -> (Vec<usize>, Choice) {
        let ctx = self.ctx();
        let key = key(&ctx.block.desc.name, &ctx.id, ctx.items);
        if let Some(kinds) = placements.remembered(&key).filter(|k| !k.intersection(present).is_empty()) {
            let members = self.members_of(kinds.intersection(present));
            return (members, Choice::Remembered { key, kinds, missing: kinds.without(present) });
        }
        let all: Vec<usize> = (0..self.workers().len()).collect();
        self.prepare(&all);
        let measured = self.measure(work);
        let kept = match (measured.best, measured.too_short) {
            _ if measured.broken => Err(NotKept::Broken),
            (_, Some(secs)) => Err(NotKept::TooShort(secs)),
            (None, None) => Err(NotKept::NothingMeasured),
            (Some(best), None) => placements.remember(&key, best),
        };
        let members = match measured.best {
            Some(best) => self.members_of(best),
            None => all,
        };
        (members, Choice::Measured { key, measured, kept })
    }

    /// The kinds of the workers at `members`, failed or not.
    fn kinds_of(&self, members: &[usize]) -> Kinds {
        members.iter().fold(Kinds::default(), |k, &i| k.union(Kinds::of(self.workers()[i].id().kind)))
    }

    /// The workers of `kinds` that have not failed.
    fn members_of(&self, kinds: Kinds) -> Vec<usize> {
        let (workers, stats) = (self.workers(), self.stats());
        (0..workers.len())
            .filter(|&i| stats[i].failure.is_none() && kinds.contains(Kinds::of(workers[i].id().kind)))
            .collect()
    }
}
