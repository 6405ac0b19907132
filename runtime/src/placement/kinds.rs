//! A set of kinds of worker (this machine's CPU, its GPUs, the daemons' GPUs): what placement
//! chooses among and what the settings file keeps, as `cpu`, `gpu+remote`, … It knows nothing of
//! measuring or of workers beyond their kind.

use crate::worker::WorkerKind;

/// A set of kinds of worker.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Kinds(u8);

impl Kinds {
    const CPU: u8 = 1;
    const GPU: u8 = 2;
    const REMOTE: u8 = 4;
    const NAMES: [(u8, &'static str); 3] = [(Self::CPU, "cpu"), (Self::GPU, "gpu"), (Self::REMOTE, "remote")];

    /// The set of one kind.
    pub(crate) fn of(kind: WorkerKind) -> Kinds {
        Kinds(match kind {
            WorkerKind::Cpu => Self::CPU,
            WorkerKind::Gpu => Self::GPU,
            WorkerKind::Remote => Self::REMOTE,
        })
    }

    /// Every kind.
    pub(crate) const ALL: Kinds = Kinds(Self::CPU | Self::GPU | Self::REMOTE);

    /// This set less `other`'s kinds.
    pub(crate) fn without(self, other: Kinds) -> Kinds {
        Kinds(self.0 & !other.0)
    }

    /// Both sets together.
    pub(crate) fn union(self, other: Kinds) -> Kinds {
        Kinds(self.0 | other.0)
    }

    /// What both sets hold.
    pub(crate) fn intersection(self, other: Kinds) -> Kinds {
        Kinds(self.0 & other.0)
    }

    /// True when `other`'s kinds are all in this set.
    pub(crate) fn contains(self, other: Kinds) -> bool {
        self.0 & other.0 == other.0
    }

    /// True for the empty set.
    pub(crate) fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// How many kinds.
    pub(crate) fn len(self) -> u32 {
        self.0.count_ones()
    }

    /// Every non-empty subset, smallest first.
    pub(crate) fn subsets(self) -> Vec<Kinds> {
        let mut all: Vec<Kinds> = (1..8u8).filter(|m| m & !self.0 == 0).map(Kinds).collect();
        all.sort_by_key(|k| (k.len(), k.0));
        all
    }

    /// Parses what [`Display`](std::fmt::Display) writes: `gpu`, `cpu+remote`, …
    pub(crate) fn parse(text: &str) -> Option<Kinds> {
        let mut bits = 0;
        for part in text.split('+') {
            bits |= Self::NAMES.iter().find(|(_, name)| *name == part.trim())?.0;
        }
        (bits != 0).then_some(Kinds(bits))
    }
}

impl std::fmt::Display for Kinds {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = Self::NAMES.iter().filter(|(bit, _)| self.0 & bit != 0).map(|(_, n)| *n).collect();
        f.write_str(&names.join("+"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_print_and_parse_back() {
        for text in ["cpu", "gpu", "remote", "cpu+gpu", "cpu+remote", "gpu+remote", "cpu+gpu+remote"] {
            let kinds = Kinds::parse(text).expect("parses");
            assert_eq!(kinds.to_string(), text);
        }
        assert_eq!(Kinds::parse("gpu+cpu").map(|k| k.to_string()).as_deref(), Some("cpu+gpu"));
        assert_eq!(Kinds::parse("tpu"), None);
        assert_eq!(Kinds::parse(""), None);
        let names: Vec<String> =
            Kinds::parse("cpu+gpu").expect("kinds").subsets().iter().map(|k| k.to_string()).collect();
        assert_eq!(names, ["cpu", "gpu", "cpu+gpu"]);
    }

    #[test]
    fn workers_are_sorted_into_kinds_by_name() {
        assert_eq!(Kinds::of(WorkerKind::Cpu).to_string(), "cpu");
        assert_eq!(Kinds::of(WorkerKind::Gpu).to_string(), "gpu");
        assert_eq!(Kinds::of(WorkerKind::Remote).to_string(), "remote");
    }
}
