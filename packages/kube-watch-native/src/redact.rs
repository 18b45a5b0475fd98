//! Keeps credentials out of every message that leaves the core.

/// Replaces every occurrence of the watch's secrets with `[REDACTED]`.
#[derive(Debug, Clone, Default)]
pub struct Redactor {
    secrets: Vec<String>,
}

/// Shorter fragments are too likely to be ordinary words to be worth masking.
const MIN_SECRET_LEN: usize = 6;

impl Redactor {
    /// A redactor for a bearer token and/or a PEM private key.
    pub fn new(token: Option<&str>, private_key_pem: Option<&str>) -> Self {
        let mut secrets: Vec<String> = token
            .map(str::trim)
            .filter(|t| t.len() >= MIN_SECRET_LEN)
            .map(String::from)
            .into_iter()
            .collect();
        // Each base64 line of the key body, so that even a partial echo is masked.
        if let Some(pem) = private_key_pem {
            secrets.extend(
                pem.lines()
                    .map(str::trim)
                    .filter(|line| !line.starts_with("-----") && line.len() >= MIN_SECRET_LEN)
                    .map(String::from),
            );
        }
        // Longest first, so a secret containing another is masked whole.
        secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
        Self { secrets }
    }

    /// Bytes its secrets take on the heap, by capacity (for the informers' memory figures).
    pub fn heap_bytes(&self) -> usize {
        self.secrets.capacity() * std::mem::size_of::<String>()
            + self.secrets.iter().map(String::capacity).sum::<usize>()
    }

    /// The same redactor masking `secret` too (a proxy's password, say).
    pub fn with_secret(mut self, secret: Option<&str>) -> Self {
        if let Some(secret) = secret.map(str::trim).filter(|s| s.len() >= MIN_SECRET_LEN) {
            self.secrets.push(secret.to_owned());
            self.secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
        }
        self
    }

    /// `text` with every secret masked.
    pub fn apply(&self, text: &str) -> String {
        self.secrets.iter().fold(text.to_owned(), |acc, secret| {
            acc.replace(secret, "[REDACTED]")
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks_token_and_key_lines() {
        let key = "-----BEGIN PRIVATE KEY-----\nMIGHAgEAMBMGByqGSM49\nAgEGCCqGSM49AwEHBG0w\n-----END PRIVATE KEY-----\n";
        let redactor = Redactor::new(Some("tok-123456"), Some(key));
        let text = "got tok-123456 and MIGHAgEAMBMGByqGSM49 back";
        assert_eq!(redactor.apply(text), "got [REDACTED] and [REDACTED] back");
    }

    #[test]
    fn masks_an_added_secret_too() {
        let redactor = Redactor::new(Some("tok-123456"), None).with_secret(Some("proxy-pass"));
        assert_eq!(
            redactor.apply("tok-123456 proxy-pass"),
            "[REDACTED] [REDACTED]"
        );
    }

    #[test]
    fn leaves_text_alone_without_secrets() {
        assert_eq!(Redactor::new(None, None).apply("plain"), "plain");
    }
}
