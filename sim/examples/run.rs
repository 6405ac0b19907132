//! Runs a WGSL kernel of the differential tests' layout (a: u32, b: f32 per item; w: i32 whole;
//! o: u32, g: f32 out; parameters u32, i32, f32) on this machine's Vulkan device and prints o
//! and g: `cargo run -p xcd-ptxsim --example run -- FILE P0 P1 P2_BITS B0_BITS [B1_BITS …]`.
use std::sync::Arc;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let wgsl = std::fs::read_to_string(&args[0]).expect("the WGSL file");
    let num = |s: &str| {
        u32::from_str_radix(s.trim_start_matches("0x"), if s.starts_with("0x") { 16 } else { 10 }).expect("a number")
    };
    let params = vec![num(&args[1]), num(&args[2]), num(&args[3])];
    let b: Vec<u32> = args[4..].iter().map(|s| num(s)).collect();
    let n = b.len() as u32;
    let mut desc = xcd_ptxsim::kernelgen::block_desc(wgsl);
    desc.name = "run".into();
    let desc = Arc::new(desc);
    let bytes = |v: &[u32]| -> Vec<u8> { v.iter().flat_map(|w| w.to_le_bytes()).collect() };
    let device = xcd_engine::discover()
        .devices
        .into_iter()
        .find(|d| d.info().id.starts_with("vulkan:"))
        .expect("a Vulkan device");
    let id = device.load_blocking(desc).expect("the kernel loads");
    let job = xcd_engine::TileJob {
        block: id,
        tile: xcd_wire::Tile { start: 0, count: n },
        params,
        inputs: vec![bytes(&vec![0; n as usize]).into(), bytes(&b).into()],
        whole: vec![xcd_wire::WholeArray::new(Arc::from(bytes(&[0])))],
    };
    match device.run_blocking(job) {
        Ok(out) => {
            for (k, array) in out.outputs.iter().enumerate() {
                let words: Vec<String> = array
                    .chunks(4)
                    .map(|c| format!("{:#010x}", u32::from_le_bytes([c[0], c[1], c[2], c[3]])))
                    .collect();
                println!("{}: {}", ["o", "g"][k], words.join(" "));
            }
        }
        Err(e) => println!("error: {e}"),
    }
}
