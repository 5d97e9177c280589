//! CPU-heavy work of a tool call (decoding and downscaling an image) runs on the blocking
//! pool: on a one-thread runtime, a task beside the call keeps running meanwhile.
#![allow(clippy::unwrap_used, missing_docs)]

use std::fs;
use std::io::Cursor;

use base64::Engine as _;
use codesmith_testkit::ticks_beside;
use serde_json::json;

use crate::common::ws;

/// A 6000x4000 striped grayscale PNG: about half a second to decode, downscale and
/// re-encode.
fn big_png() -> Vec<u8> {
    let (width, height) = (6000u32, 4000u32);
    let mut pixels = vec![0u8; (width * height) as usize];
    for (i, row) in pixels.chunks_mut(width as usize).enumerate() {
        row.fill((i % 256) as u8);
    }
    let mut out = Vec::new();
    image::DynamicImage::ImageLuma8(image::GrayImage::from_raw(width, height, pixels).unwrap())
        .write_to(&mut Cursor::new(&mut out), image::ImageFormat::Png)
        .unwrap();
    out
}

#[tokio::test(flavor = "current_thread")]
async fn read_file_fits_a_large_image_without_holding_the_executor() {
    let mut w = ws();
    w.ctx.images = true;
    fs::write(w.root.join("big.png"), big_png()).unwrap();
    let (v, ticks) = ticks_beside(w.call("read_file", json!({"path": "big.png"}))).await;
    assert_eq!(v["ok"], true, "{v}");
    let out = v["output"].as_str().unwrap();
    assert!(out.contains("downscaled from 6000x4000"), "{out}");
    assert!(ticks >= 2, "the task beside read_file ran {ticks} times");
}

#[tokio::test(flavor = "current_thread")]
async fn an_mcp_image_result_is_fitted_without_holding_the_executor() {
    let data = base64::engine::general_purpose::STANDARD.encode(big_png());
    let result = json!({"content": [{"type": "image", "data": data, "mimeType": "image/png"}]});
    let ((text, images), ticks) =
        ticks_beside(codesmith_tools::mcp::tool::result_content(&result, true)).await;
    assert_eq!(images.len(), 1, "{text}");
    assert!(text.contains("downscaled from 6000x4000"), "{text}");
    assert!(
        ticks >= 2,
        "the task beside the MCP result ran {ticks} times"
    );
}
