//! Panics inside naga that xcd-forms catches and turns into a refusal (the daemon's behaviour)
//! are not crashes of the path under test; any other panic still is. libfuzzer-sys's own hook
//! aborts on every panic, caught or not, so this hook stands in front of it.

use std::sync::Once;

static INSTALL: Once = Once::new();

/// Installs the hook once per process.
pub fn tolerate_caught_naga_panics() {
    INSTALL.call_once(|| {
        let abort = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let in_naga = info.location().is_some_and(|at| at.file().contains("/naga-"));
            if !in_naga {
                abort(info);
            }
        }));
    });
}
