//! Images for the model: recognising PNG, JPEG, GIF and WebP files, and fitting them to
//! what providers accept.
//!
//! Both dialects take an image of at most [`MAX_EDGE`] pixels on its long edge without
//! scaling it down themselves (Anthropic's documented optimum, within OpenAI's high
//! detail) and at most [`MAX_BYTES`] encoded (Anthropic's 5 MB per image, counted after
//! base64). A larger image is downscaled here, keeping its aspect ratio, and re-encoded
//! (PNG, or JPEG for a JPEG source or when the PNG stays too large); the caller says so
//! in its result. Decoding is bounded ([`MAX_PIXELS`]), so a decompression bomb is
//! refused instead of allocating gigabytes.
//!
//! [`attach`] is the one way a front end turns a path a person named (`exec --image`,
//! the UI's `@path`) into an attached image.

use std::io::Cursor;
use std::path::Path;

use codesmith_protocol::ImagePart;
use image::{DynamicImage, ImageFormat, ImageReader, Limits};

/// Longest edge, in pixels, of an image sent to a model.
pub const MAX_EDGE: u32 = 1568;

/// Most bytes of one encoded image sent to a model: 3.75 MB, which is 5 MB in base64.
pub const MAX_BYTES: usize = 3_750_000;

/// Most pixels of an image that is decoded (to be downscaled): 100 megapixels.
pub const MAX_PIXELS: u64 = 100_000_000;

/// Most bytes of an image file read, to be attached or by `read_file`: 50 MB.
pub const MAX_FILE_BYTES: u64 = 50 * 1024 * 1024;

/// The one sentence for an image file of `bytes` bytes, more than [`MAX_FILE_BYTES`],
/// whichever way it came (`exec --image`, the UI's `@path`, `read_file`); `shown` names
/// the file.
pub fn too_large(shown: &str, bytes: u64) -> String {
    format!("{shown} is {bytes} bytes, more than the {MAX_FILE_BYTES} bytes an image may be")
}

/// An image fitted to the providers' limits.
#[derive(Debug, Clone)]
pub struct Fitted {
    /// The image as it is sent.
    pub part: ImagePart,
    /// Width and height of the source, in pixels.
    pub original: (u32, u32),
    /// Width and height as sent (equal to `original` when nothing was scaled).
    pub sent: (u32, u32),
}

impl Fitted {
    /// Whether the image was scaled down.
    pub fn downscaled(&self) -> bool {
        self.original != self.sent
    }

    /// One sentence on what was sent: its type, size and, when it was downscaled, from
    /// what and why.
    pub fn describe(&self) -> String {
        let (w, h) = self.sent;
        let mut out = format!(
            "{}, {w}x{h} pixels, {} bytes",
            self.part.media_type,
            self.part.data.len()
        );
        if self.downscaled() {
            let (ow, oh) = self.original;
            out.push_str(&format!(
                "; downscaled from {ow}x{oh} to fit the providers' limit of {MAX_EDGE} pixels \
                 on the long edge and {MAX_BYTES} bytes"
            ));
        }
        out
    }
}

/// Why an image could not be prepared.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ImageError {
    /// The bytes are none of PNG, JPEG, GIF or WebP.
    NotAnImage,
    /// The image's header or pixels could not be decoded (the decoder's reason).
    Undecodable(String),
    /// The image has more than [`MAX_PIXELS`] pixels.
    TooManyPixels {
        /// Width in pixels.
        width: u32,
        /// Height in pixels.
        height: u32,
    },
    /// The file could not be read (the reason), or is larger than [`MAX_FILE_BYTES`].
    Unreadable(String),
}

impl std::fmt::Display for ImageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ImageError::NotAnImage => {
                f.write_str("not a PNG, JPEG, GIF or WebP image (judged by its first bytes)")
            }
            ImageError::Undecodable(why) => write!(f, "the image cannot be decoded: {why}"),
            ImageError::TooManyPixels { width, height } => write!(
                f,
                "the image is {width}x{height} pixels, more than the {MAX_PIXELS} pixels \
                 CodeSmith decodes"
            ),
            ImageError::Unreadable(why) => f.write_str(why),
        }
    }
}

impl std::error::Error for ImageError {}

/// The media type of `bytes` judged by their magic numbers: `image/png`, `image/jpeg`,
/// `image/gif` or `image/webp`, else `None`.
pub fn sniff(bytes: &[u8]) -> Option<&'static str> {
    if bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some("image/png")
    } else if bytes.starts_with(&[0xFF, 0xD8, 0xFF]) {
        Some("image/jpeg")
    } else if bytes.starts_with(b"GIF87a") || bytes.starts_with(b"GIF89a") {
        Some("image/gif")
    } else if bytes.len() >= 12 && &bytes[..4] == b"RIFF" && &bytes[8..12] == b"WEBP" {
        Some("image/webp")
    } else {
        None
    }
}

/// Fits the encoded image `bytes` to the providers' limits. Every image is decoded in
/// full (within [`MAX_PIXELS`] and a matching memory cap; an animation's first frame
/// only) and what is sent is re-encoded from the decoded pixels (PNG, or JPEG for a
/// JPEG), downscaled to [`MAX_EDGE`] on its long edge when larger: bytes that only look
/// like an image (a cut-off file, junk after a valid header, a header claiming absurd
/// dimensions) are refused, never passed on. This is the one door for every image a
/// model reads: `exec --image`, `@path`, `read_file` and MCP image results. It is CPU
/// and memory heavy: async code calls it through [`fit_async`].
///
/// # Errors
/// [`ImageError::NotAnImage`], [`ImageError::Undecodable`],
/// [`ImageError::TooManyPixels`].
pub fn fit(bytes: Vec<u8>) -> Result<Fitted, ImageError> {
    let media_type = sniff(&bytes).ok_or(ImageError::NotAnImage)?;
    let format = ImageFormat::from_mime_type(media_type).ok_or(ImageError::NotAnImage)?;
    let reader = || {
        let mut reader = ImageReader::with_format(Cursor::new(&bytes[..]), format);
        let mut limits = Limits::default();
        limits.max_alloc = Some(MAX_PIXELS * 4);
        reader.limits(limits);
        reader
    };
    let (width, height) = reader()
        .into_dimensions()
        .map_err(|e| ImageError::Undecodable(e.to_string()))?;
    if u64::from(width) * u64::from(height) > MAX_PIXELS {
        return Err(ImageError::TooManyPixels { width, height });
    }
    let decoded = reader()
        .decode()
        .map_err(|e| ImageError::Undecodable(e.to_string()))?;
    // The pixels decoded are what is judged: a header's claim is not.
    let (width, height) = (decoded.width(), decoded.height());
    if width == 0 || height == 0 {
        return Err(ImageError::Undecodable(format!(
            "it decodes to {width}x{height} pixels"
        )));
    }
    if u64::from(width) * u64::from(height) > MAX_PIXELS {
        return Err(ImageError::TooManyPixels { width, height });
    }
    let mut edge = MAX_EDGE;
    loop {
        let small = if width.max(height) > edge {
            decoded.thumbnail(edge, edge)
        } else {
            decoded.clone()
        };
        let sent = (small.width(), small.height());
        let (media_type, data) = encode(&small, format == ImageFormat::Jpeg)?;
        if data.len() <= MAX_BYTES || edge <= 64 {
            return Ok(Fitted {
                part: ImagePart::new(media_type, data),
                original: (width, height),
                sent,
            });
        }
        edge /= 2;
    }
}

/// [`fit`] on tokio's blocking pool, so the decode, downscale and re-encode (about 0.7 s
/// and 440 MB for a 10000x10000 PNG) never hold an executor thread: other tasks, a
/// cancellation and parallel calls go on meanwhile. This is how async code fits an image
/// (`read_file`, MCP image results). A panic in the decoder, or the task being dropped
/// when the runtime shuts down, is [`ImageError::Undecodable`] like any bad image, never
/// a crash.
///
/// # Errors
/// As [`fit`].
pub async fn fit_async(bytes: Vec<u8>) -> Result<Fitted, ImageError> {
    off_executor(move || fit(bytes)).await
}

/// [`attach`] on tokio's blocking pool (see [`fit_async`]): what an async front end calls.
///
/// # Errors
/// As [`attach`].
pub async fn attach_async(path: &Path) -> Result<Fitted, ImageError> {
    let path = path.to_path_buf();
    off_executor(move || attach(&path)).await
}

/// Runs `work` on the blocking pool; a join error (a panic, or the runtime shutting down)
/// is an undecodable image.
async fn off_executor(
    work: impl FnOnce() -> Result<Fitted, ImageError> + Send + 'static,
) -> Result<Fitted, ImageError> {
    tokio::task::spawn_blocking(work).await.unwrap_or_else(|e| {
        let why = if e.is_panic() {
            "the decoder failed on it"
        } else {
            "decoding it was stopped"
        };
        Err(ImageError::Undecodable(why.to_string()))
    })
}

/// `image` encoded as JPEG when `photo` (or when its PNG is over [`MAX_BYTES`]), else
/// PNG.
fn encode(image: &DynamicImage, photo: bool) -> Result<(&'static str, Vec<u8>), ImageError> {
    let failed = |e: image::ImageError| ImageError::Undecodable(e.to_string());
    if !photo {
        let mut png = Vec::new();
        image
            .write_to(&mut Cursor::new(&mut png), ImageFormat::Png)
            .map_err(failed)?;
        if png.len() <= MAX_BYTES {
            return Ok(("image/png", png));
        }
    }
    let mut jpeg = Vec::new();
    DynamicImage::ImageRgb8(image.to_rgb8())
        .write_to(&mut Cursor::new(&mut jpeg), ImageFormat::Jpeg)
        .map_err(failed)?;
    Ok(("image/jpeg", jpeg))
}

/// The image file at `path`, which a person named (not a workspace path the model
/// chose), fitted to the providers' limits: what `exec --image` attaches, and what the
/// UI calls to attach an image typed or pasted as `@path`.
///
/// # Errors
/// [`ImageError::Unreadable`] (missing, not a regular file, over [`MAX_FILE_BYTES`]), or
/// as [`fit`].
pub fn attach(path: &Path) -> Result<Fitted, ImageError> {
    let shown = path.display();
    let meta = std::fs::metadata(path)
        .map_err(|e| ImageError::Unreadable(format!("cannot read {shown}: {e}")))?;
    if !meta.is_file() {
        return Err(ImageError::Unreadable(format!(
            "{shown} is not a regular file"
        )));
    }
    if meta.len() > MAX_FILE_BYTES {
        return Err(ImageError::Unreadable(too_large(
            &shown.to_string(),
            meta.len(),
        )));
    }
    let bytes = std::fs::read(path)
        .map_err(|e| ImageError::Unreadable(format!("cannot read {shown}: {e}")))?;
    fit(bytes)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn png(width: u32, height: u32) -> Vec<u8> {
        let img =
            image::GrayImage::from_fn(width, height, |x, y| image::Luma([((x ^ y) & 0xFF) as u8]));
        let mut out = Vec::new();
        DynamicImage::ImageLuma8(img)
            .write_to(&mut Cursor::new(&mut out), ImageFormat::Png)
            .unwrap();
        out
    }

    #[test]
    fn the_four_formats_are_known_by_their_first_bytes_and_nothing_else_is() {
        assert_eq!(sniff(&png(2, 2)), Some("image/png"));
        assert_eq!(sniff(&[0xFF, 0xD8, 0xFF, 0xE0]), Some("image/jpeg"));
        assert_eq!(sniff(b"GIF89a...."), Some("image/gif"));
        assert_eq!(sniff(b"RIFF\0\0\0\0WEBPVP8 "), Some("image/webp"));
        assert_eq!(sniff(b"<svg xmlns="), None);
        assert_eq!(fit(b"hello".to_vec()).unwrap_err(), ImageError::NotAnImage);
    }

    fn pixels(bytes: &[u8]) -> Vec<u8> {
        image::load_from_memory(bytes)
            .unwrap()
            .to_luma8()
            .into_raw()
    }

    #[test]
    fn a_small_image_is_sent_re_encoded_from_its_pixels() {
        let mut bytes = png(40, 30);
        // Bytes after the end of the image are not sent.
        bytes.extend_from_slice(b"PRIVATE DATA PRIVATE DATA");
        let fitted = fit(bytes.clone()).unwrap();
        assert!(!fitted.downscaled());
        assert_eq!(fitted.sent, (40, 30));
        assert_eq!(fitted.part.media_type, "image/png");
        assert!(!fitted.part.data.windows(7).any(|w| w == b"PRIVATE"));
        assert_eq!(pixels(&fitted.part.data), pixels(&bytes));
    }

    #[test]
    fn bytes_that_only_look_like_an_image_are_refused() {
        // A PNG cut inside its image data, at several points.
        let whole = png(300, 200);
        for cut in [60, 100, whole.len() / 2, whole.len() - 20] {
            let r = fit(whole[..cut].to_vec());
            assert!(
                matches!(r, Err(ImageError::Undecodable(_))),
                "cut {cut}: {r:?}"
            );
        }
        // A valid header followed by data that is not compressed pixels.
        let mut junk = whole[..33].to_vec();
        let data = b"PRIVATE DATA ".repeat(500);
        junk.extend_from_slice(&(data.len() as u32).to_be_bytes());
        junk.extend_from_slice(b"IDAT");
        junk.extend_from_slice(&data);
        junk.extend_from_slice(&[0; 4]);
        assert!(matches!(fit(junk), Err(ImageError::Undecodable(_))));
        // A GIF header with nothing after it, and a WebP header claiming 16384x16384.
        let gif = b"GIF89a\x00\x40\x00\x40\x00\x00\x00;".to_vec();
        assert!(fit(gif).is_err());
        let mut webp = b"RIFF\x00\x00\x00\x00WEBPVP8L".to_vec();
        webp.extend_from_slice(&[0x10, 0, 0, 0, 0x2f, 0xff, 0xff, 0xff, 0x0f, 0, 0, 0]);
        assert!(fit(webp).is_err());
    }

    #[test]
    fn an_animated_gif_is_sent_as_its_first_frame_as_png() {
        use image::codecs::gif::GifEncoder;
        let mut gif = Vec::new();
        {
            let mut enc = GifEncoder::new(&mut gif);
            for i in 0..50u8 {
                let frame = image::RgbaImage::from_pixel(8, 8, image::Rgba([i, 0, 0, 255]));
                enc.encode_frame(image::Frame::new(frame)).unwrap();
            }
        }
        let fitted = fit(gif).unwrap();
        assert_eq!(fitted.part.media_type, "image/png");
        assert_eq!(fitted.sent, (8, 8));
        let first = image::load_from_memory(&fitted.part.data)
            .unwrap()
            .to_rgba8();
        assert_eq!(first.get_pixel(0, 0).0, [0, 0, 0, 255]);
    }

    #[test]
    fn a_wide_image_is_downscaled_to_the_long_edge_keeping_its_shape() {
        let fitted = fit(png(4000, 1000)).unwrap();
        assert_eq!(fitted.sent, (MAX_EDGE, MAX_EDGE / 4));
        assert!(fitted.describe().contains("downscaled from 4000x1000"));
        assert!(fitted.part.data.len() <= MAX_BYTES);
    }

    #[test]
    fn a_forty_megapixel_image_is_downscaled_within_both_limits() {
        let started = std::time::Instant::now();
        // Stripes, built without a per-pixel closure (this test crate is unoptimised).
        let mut pixels = vec![0u8; 8000 * 5000];
        for (i, row) in pixels.chunks_mut(8000).enumerate() {
            row.fill((i % 256) as u8);
        }
        let mut big = Vec::new();
        DynamicImage::ImageLuma8(image::GrayImage::from_raw(8000, 5000, pixels).unwrap())
            .write_to(&mut Cursor::new(&mut big), ImageFormat::Png)
            .unwrap();
        let fitted = fit(big).unwrap();
        assert!(fitted.downscaled());
        assert_eq!(fitted.original, (8000, 5000));
        assert_eq!(fitted.sent, (MAX_EDGE, 980));
        assert!(fitted.part.data.len() <= MAX_BYTES);
        assert!(started.elapsed() < std::time::Duration::from_secs(20));
    }

    /// A panic on the blocking pool is an undecodable image, as a bad image is.
    #[tokio::test]
    async fn a_panic_while_fitting_is_an_undecodable_image() {
        let r = off_executor(|| panic!("decoder bug")).await;
        assert_eq!(
            r.unwrap_err(),
            ImageError::Undecodable("the decoder failed on it".to_string())
        );
    }

    #[test]
    fn a_truncated_image_is_undecodable_not_a_panic() {
        let mut bytes = png(3000, 3000);
        bytes.truncate(bytes.len() / 2);
        assert!(matches!(fit(bytes), Err(ImageError::Undecodable(_))));
    }
}
