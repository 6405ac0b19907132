//! xcmon's trace intake: each line as the intake takes it from a program's connection, into the
//! store, then the runs page and each run's own page (its timeline) rendered from the store as
//! a browser would get them.
#![no_main]

use libfuzzer_sys::fuzz_target;
use xcd_monitor::Store;
use xcd_ui::askama::Template;
use xcd_ui::{RunPage, RunsPage};
use xcd_wire::trace::MAX_LINE;

fuzz_target!(|data: &[u8]| {
    let store = Store::default();
    let from = std::net::SocketAddr::from(([127, 0, 0, 1], 40000));
    for line in data.split_inclusive(|&b| b == b'\n') {
        if line.len() <= MAX_LINE {
            xcd_monitor::intake::take_line(&store, from, line);
        }
    }
    let page = RunsPage::of(&store.runs(), store.first_id(), store.counts().0);
    page.render().expect("the runs page renders");
    for (id, received) in (store.first_id()..).zip(store.runs()) {
        RunPage::of(id, &received).render().expect("a run's page renders");
    }
});
