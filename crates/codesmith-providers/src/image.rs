//! Images in requests: the encodings both dialects share and the text sent in place of
//! an image a model does not read.

use base64::Engine as _;
use codesmith_protocol::ImagePart;

/// Why an image is not sent to a model configured with `images = false`.
pub(crate) const IMAGES_OFF: &str =
    "this model is configured with images = false, so it is not sent";

/// The image's bytes in standard base64 (what both dialects carry).
pub(crate) fn base64(part: &ImagePart) -> String {
    base64::engine::general_purpose::STANDARD.encode(&part.data)
}

/// The image as a `data:` URI (OpenAI-compatible `image_url`).
pub(crate) fn data_uri(part: &ImagePart) -> String {
    format!("data:{};base64,{}", part.media_type, base64(part))
}

/// What the model reads for `part` when it is not sent as an image: `None` when it is
/// sent (`images` on and its bytes present), else the omission text.
pub(crate) fn omitted(part: &ImagePart, images: bool) -> Option<String> {
    if !part.has_bytes() {
        Some(part.omitted_text(""))
    } else if !images {
        Some(part.omitted_text(IMAGES_OFF))
    } else {
        None
    }
}
