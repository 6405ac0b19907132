//! What the stand-in driver library (`fakecuda/`) relies on the interpreter for beyond the
//! emitter's PTX: `trap` ends a kernel with an error of its own, an entry may declare no
//! parameters (`.entry name()` on one line), and a kernel that never ends stops soon after its
//! stop flag is set (as the driver stops a destroyed context's kernels).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use xcd_ptxsim::{SimError, parse};

const HEADER: &str = ".version 6.0\n.target sm_60\n.address_size 64\n";

#[test]
fn a_trap_is_an_error_of_its_own() {
    let program = parse(&format!("{HEADER}.visible .entry t()\n{{\n\ttrap;\n\tret;\n}}\n")).expect("reads");
    assert_eq!(program.entry, "t");
    assert!(program.param_bytes().is_empty());
    assert_eq!(program.run(1, 1, &[], &mut [], 100), Err(SimError::Trap { pc: 0 }));
}

#[test]
fn a_kernel_that_never_ends_stops_when_told() {
    let program = parse(&format!("{HEADER}.visible .entry spin()\n{{\nxc_L0:\n\tbra xc_L0;\n}}\n")).expect("reads");
    assert_eq!(program.run(1, 1, &[], &mut [], 1000), Err(SimError::TooLong), "a budget still ends it");
    let stop = Arc::new(AtomicBool::new(false));
    let flag = stop.clone();
    let setter = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(100));
        flag.store(true, Ordering::Relaxed);
    });
    let started = Instant::now();
    let ran = program.run_until(1, 1, &[], &mut [], u64::MAX, &stop);
    setter.join().expect("the setter");
    assert_eq!(ran, Err(SimError::Stopped));
    assert!(started.elapsed() >= Duration::from_millis(100), "it ran until told");
}
