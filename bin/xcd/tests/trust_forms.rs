//! Whose code reaches the driver. By default the daemon makes its GPU's form from the block's
//! WGSL and ignores the other forms a block carries; with `-trust-forms` it loads a carried form
//! of its device's kind as sent, and says so when it starts. The block here carries WGSL that
//! doubles and SPIR-V (valid, from another kernel) that adds one, so the answer shows which ran.

mod common;

use common::*;
use xcd_wire::{Access, ArrayRole, ArraySpec, BlockDesc, Forms};

const KERNEL: &str = r#"
struct Tile { start: u32, count: u32, first: u32 }
@group(0) @binding(0) var<uniform> tile: Tile;
@group(0) @binding(1) var<storage, read> x: array<u32>;
@group(0) @binding(2) var<storage, read_write> y: array<u32>;
@compute @workgroup_size(64)
fn k(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = tile.first + gid.x;
    if (i >= tile.count) { return; }
    y[i] = OP;
}
"#;

fn block() -> BlockDesc {
    let doubles = KERNEL.replace("OP", "x[i] * 2u");
    let adds_one = xcd_forms::make_forms(&KERNEL.replace("OP", "x[i] + 1u"), "k").expect("forms").spirv;
    BlockDesc {
        name: "which".into(),
        entry: "k".into(),
        arrays: vec![
            ArraySpec { name: "x".into(), elem_size: 4, role: ArrayRole::PerItem(Access::In) },
            ArraySpec { name: "y".into(), elem_size: 4, role: ArrayRole::PerItem(Access::Out) },
        ],
        params: Vec::new(),
        forms: Forms { wgsl: Some(doubles), spirv: Some(adds_one), ptx: Some("// never loaded".into()), msl: None },
    }
}

/// Registers the block on `daemon` and runs one tile of x = 10, 20, 30.
async fn answer(daemon: &xcd_e2e::Daemon) -> Vec<u32> {
    let client = xcd_e2e::client();
    let desc = block();
    let registered =
        client.post(daemon.url("/v1/blocks")).header("authorization", auth()).json(&desc).send().await.expect("sent");
    assert!(registered.status().is_success(), "{}", registered.text().await.unwrap_or_default());
    let body: Vec<u8> = [10u32, 20, 30].iter().flat_map(|v| v.to_le_bytes()).collect();
    let url = daemon.url(&format!("/v1/blocks/{}/tile?start=0&count=3", desc.id()));
    let tile = client.post(url).header("authorization", auth()).body(body).send().await.expect("sent");
    assert_eq!(tile.status(), 200);
    tile.bytes().await.expect("bytes").chunks(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn carried_forms_are_ignored_unless_the_operator_trusts_them() {
    let daemon = xcd().secret(SECRET).args(&["-mdns", "false"]).start();
    assert_eq!(answer(&daemon).await, [20, 40, 60], "the daemon ran the WGSL, not the program's SPIR-V");
    assert!(!daemon.stderr().contains("trust-forms"), "{}", daemon.stderr());

    let trusting = xcd().secret(SECRET).args(&["-mdns", "false", "-trust-forms"]).start();
    if !trusting.stdout.iter().any(|l| l.contains("serving vulkan:")) {
        eprintln!("skipped the trusted half: the daemon serves no Vulkan device here");
        return;
    }
    assert_eq!(answer(&trusting).await, [11, 21, 31], "-trust-forms loaded the program's SPIR-V as sent");
    assert!(
        trusting.stderr().contains("-trust-forms: programs' own PTX, SPIR-V and MSL reach the driver unchecked"),
        "the daemon warns: {}",
        trusting.stderr()
    );
}
