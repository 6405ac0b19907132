//! NVIDIA's assembler accepts the PTX that xcd-forms writes for every example block, for the
//! oldest target the forms declare (sm_60) and for Hopper (sm_90), and says of the CUDA tests'
//! hand-written PTX (`engine/tests/ptx/`) what those tests expect of a driver. Generated kernels
//! are checked the same way in the differential tests.

#[test]
fn ptxas_accepts_every_example_block_for_sm_60_and_sm_90() {
    let Some(ptxas) = xcd_ptxsim::ptxas::required() else { return };
    let dir = format!("{}/../kernels/wgsl", env!("CARGO_MANIFEST_DIR"));
    let mut checked = 0;
    for entry in std::fs::read_dir(&dir).expect("kernels/wgsl lists") {
        let path = entry.expect("an entry").path();
        let name = path.file_stem().and_then(|s| s.to_str()).expect("a file name").to_owned();
        let wgsl = std::fs::read_to_string(&path).expect("the kernel");
        let ptx = xcd_forms::Kernel::from_wgsl(&wgsl, &name).and_then(|k| k.ptx()).expect("PTX");
        xcd_ptxsim::ptxas::check(&ptxas, &ptx, &name).unwrap_or_else(|e| panic!("{e}"));
        checked += 1;
    }
    assert!(checked >= 3, "expected escape, saxpy and poly, found {checked}");
}

#[test]
fn ptxas_refuses_broken_ptx_so_the_check_can_fail() {
    let Some(ptxas) = xcd_ptxsim::ptxas::required() else { return };
    let broken = ".version 6.0\n.target sm_60\n.address_size 64\n.visible .entry k() { add.rn.f32 %f1, %f2; }\n";
    assert!(xcd_ptxsim::ptxas::check(&ptxas, broken, "broken").is_err());
}

#[test]
fn ptxas_says_of_the_cuda_tests_hand_written_ptx_what_they_expect() {
    let Some(ptxas) = xcd_ptxsim::ptxas::required() else { return };
    let dir = format!("{}/../engine/tests/ptx", env!("CARGO_MANIFEST_DIR"));
    // Each file, and whether a driver's compiler takes it (the tests expect so of the driver).
    let expected = [("trap", true), ("extra_param", true), ("jit_fails", false), ("too_new", false)];
    let mut seen: Vec<String> = std::fs::read_dir(&dir)
        .expect("engine/tests/ptx lists")
        .map(|e| e.expect("an entry").path().file_stem().and_then(|s| s.to_str()).expect("a name").to_owned())
        .collect();
    seen.sort();
    let mut named: Vec<&str> = expected.iter().map(|(name, _)| *name).collect();
    named.sort();
    assert_eq!(seen, named, "every hand-written PTX file is checked here");
    for (name, assembles) in expected {
        let ptx = std::fs::read_to_string(format!("{dir}/{name}.ptx")).expect("the PTX");
        let said = xcd_ptxsim::ptxas::check(&ptxas, &ptx, name);
        assert_eq!(said.is_ok(), assembles, "{name}: {said:?}");
    }
}
