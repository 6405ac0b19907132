//! The real server in-process over TLS, on this machine's first device (llvmpipe where there is
//! no GPU): blocks are bounded by count and by bytes, and a block refused for want of room is
//! refused before anything reads or loads it (issue 18: refused registrations cost nothing); a
//! whole array that no device could bind is refused at its upload, not at its first tile.

mod common;

use xcd_api::Limits;
use xcd_api::state::BLOCK_WEIGHT;
use xcd_wire::BlockDesc;

/// saxpy under another name: another block (another id), the same kernel.
fn saxpy_named(name: &str, wgsl: Option<String>) -> BlockDesc {
    let saxpy = xcd_kernels::all().into_iter().find(|b| b.desc.name == "saxpy").expect("saxpy");
    let mut desc = (*saxpy.desc).clone();
    desc.name = name.to_owned();
    desc.forms = xcd_wire::Forms { wgsl: wgsl.or(desc.forms.wgsl), ..Default::default() };
    desc
}

async fn register(base: &str, desc: &BlockDesc) -> (u16, String) {
    let response = xcd_e2e::client().post(format!("{base}/v1/blocks")).json(desc).send().await.expect("sent");
    (response.status().as_u16(), response.text().await.unwrap_or_default())
}

#[tokio::test(flavor = "multi_thread")]
async fn blocks_are_bounded_by_count_and_bytes_before_any_device_loads_them() {
    let Some(device) = common::first_device() else { return };
    let limits = Limits { max_blocks: 2, ..Limits::default() };
    let server = common::Server::start(limits, vec![device.clone()]).await;
    assert_eq!(register(&server.base, &saxpy_named("one", None)).await.0, 201);
    assert_eq!(register(&server.base, &saxpy_named("two", None)).await.0, 201);
    assert_eq!(register(&server.base, &saxpy_named("two", None)).await.0, 200, "the same block again");
    // A third: refused as busy, before its kernel is read (this one would be load_failed).
    let broken = saxpy_named("three", Some("this is not WGSL".into()));
    let (status, body) = register(&server.base, &broken).await;
    assert_eq!(status, 503, "{body}");
    assert!(body.contains("\"busy\"") && body.contains("2 of 2"), "{body}");
    server.stop().await;

    // By bytes: room for two blocks' weight, not three.
    let limits = Limits { max_block_store_bytes: 2 * BLOCK_WEIGHT, ..Limits::default() };
    let server = common::Server::start(limits, vec![device]).await;
    assert_eq!(register(&server.base, &saxpy_named("one", None)).await.0, 201);
    assert_eq!(register(&server.base, &saxpy_named("two", None)).await.0, 201);
    let (status, body) = register(&server.base, &saxpy_named("three", None)).await;
    assert_eq!(status, 503, "{body}");
    assert!(body.contains("MiB"), "says the bytes: {body}");
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_whole_array_no_device_binds_is_refused_at_upload() {
    let Some(device) = common::first_device() else { return };
    let binds = device.info().max_buffer_bytes;
    if binds >= (1 << 30) {
        eprintln!("skipped: this device binds {binds} bytes, past the daemon's upload limit");
        return;
    }
    let server = common::Server::start(Limits::default(), vec![device]).await;
    let client = xcd_e2e::client();
    let put = |bytes: Vec<u8>| {
        let hash = hex::encode(xcd_wire::content_hash(&bytes));
        client.put(format!("{}/v1/arrays/{hash}", server.base)).body(bytes).send()
    };
    let over = put(vec![0u8; binds as usize + 4]).await.expect("sent");
    assert_eq!(over.status(), 413);
    let text = over.text().await.unwrap_or_default();
    assert!(text.contains("too_large") && text.contains(&binds.to_string()) && text.contains("split"), "{text}");
    let fits = put(vec![1u8; 1 << 20]).await.expect("sent");
    assert_eq!(fits.status(), 201, "{}", fits.text().await.unwrap_or_default());
    server.stop().await;
}
