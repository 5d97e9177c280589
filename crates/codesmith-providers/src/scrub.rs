//! Secret scrubbing for error texts (seed 002, "Seven Notes on Settling
//! Security Debt"): HTTP services echo keys and bearer tokens back in their
//! errors, and nothing of that may reach the model, the transcript or a log.
//! The rules live once, in [`codesmith_policy::scrub_secrets`]; this is the
//! providers' owned-`String` entry point.

/// Replaces `Bearer …` tokens and API-key-shaped strings in `text` with
/// `[REDACTED]` (see [`codesmith_policy::scrub_secrets`] for the rules).
pub fn scrub_secrets(text: &str) -> String {
    codesmith_policy::scrub_secrets(text).into_owned()
}

#[cfg(test)]
mod tests {
    use super::scrub_secrets;

    #[test]
    fn bearer_tokens_are_redacted() {
        let s = scrub_secrets("header was Authorization: Bearer abc.DEF-123_xyz");
        assert_eq!(s, "header was Authorization: Bearer [REDACTED]");
        assert!(!scrub_secrets("bearer s3cr3tvalue").contains("s3cr3t"));
    }

    #[test]
    fn vendor_keys_are_redacted() {
        let s = scrub_secrets("Incorrect API key provided: sk-proj-AbCdEf1234567890xyz.");
        assert!(
            s.starts_with("Incorrect API key provided: [REDACTED]"),
            "{s}"
        );
        assert!(!s.contains("AbCdEf"), "{s}");
        let s = scrub_secrets("key sk-ant-api03-aaaaBBBB1111cccc2222-dddd rejected");
        assert_eq!(s, "key [REDACTED] rejected");
    }

    #[test]
    fn assignments_keep_the_name() {
        let s = scrub_secrets(r#"{"x-api-key": "hunter2hunter2", "model": "m"}"#);
        assert_eq!(s, r#"{"x-api-key": "[REDACTED]", "model": "m"}"#);
        let s = scrub_secrets("GET /v1?api_key=abcdef123&x=1");
        assert_eq!(s, "GET /v1?api_key=[REDACTED]&x=1");
    }

    #[test]
    fn long_opaque_tokens_are_redacted() {
        let b64 = "AIzaSyD4nd0mG00gleK3yL00ksL1keTh1s12345";
        assert_eq!(scrub_secrets(b64), "[REDACTED]");
    }

    #[test]
    fn ordinary_text_is_untouched() {
        let text = "This model's maximum context length is 128000 tokens. \
                    See /usr/lib/x86_64-linux-gnu/libssl.so and context_length_exceeded. \
                    Request id 123e4567-e89b-12d3-a456-426614174000.";
        assert_eq!(scrub_secrets(text), text);
    }
}
