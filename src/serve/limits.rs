//! The shape limits of a POST body, checked on the bytes as they arrive, before anything is
//! parsed or built: nesting depth and the number of JSON values.
//!
//! Size alone does not bound what a parser builds: 60 MB of `[0,0,0,…]` is 30 million values,
//! and a value tree of them costs gigabytes. Counting as the body streams in means a body
//! over a limit is refused as soon as the limit is crossed, holding only what came before
//! (about 2 bytes a value for the cheapest shape), and a body within the limits is scanned
//! once by a loop that allocates nothing.
//!
//! The count is of value separators and openings outside strings (each `,` `:` `[` `{`), a
//! close upper bound of the values and keys in the text; strings are skipped whole, escapes
//! included, so nothing inside a string counts.

/// Deepest nesting accepted (serde_json's own recursion limit: nothing deeper parses anyway).
pub const MAX_DEPTH: usize = 128;
/// Most JSON values (and keys) in one message, by default.
pub const DEFAULT_MAX_VALUES: usize = 1 << 18;

/// Which shape limit a body crossed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exceeded {
    /// Nested deeper than [`MAX_DEPTH`].
    Depth,
    /// More values than the limit.
    Values(usize),
}

/// The streaming counter.
#[derive(Debug, Clone, Default)]
pub struct Shape {
    max_values: usize,
    depth: usize,
    values: usize,
    in_string: bool,
    escaped: bool,
}

impl Shape {
    /// A counter allowing `max_values` values.
    pub fn new(max_values: usize) -> Shape {
        Shape {
            max_values,
            ..Shape::default()
        }
    }

    /// Feeds the next bytes of the body.
    pub fn feed(&mut self, chunk: &[u8]) -> Result<(), Exceeded> {
        let mut i = 0;
        while i < chunk.len() {
            if self.in_string {
                if self.escaped {
                    self.escaped = false;
                    i += 1;
                    continue;
                }
                // Skip to the next quote or backslash.
                match memchr::memchr2(b'"', b'\\', &chunk[i..]) {
                    Some(at) => {
                        i += at;
                        if chunk[i] == b'\\' {
                            self.escaped = true;
                        } else {
                            self.in_string = false;
                        }
                        i += 1;
                    }
                    None => return Ok(()),
                }
                continue;
            }
            match chunk[i] {
                b'"' => self.in_string = true,
                b'[' | b'{' => {
                    self.depth += 1;
                    if self.depth > MAX_DEPTH {
                        return Err(Exceeded::Depth);
                    }
                    self.count()?;
                }
                b']' | b'}' => self.depth = self.depth.saturating_sub(1),
                b',' | b':' => self.count()?,
                _ => {}
            }
            i += 1;
        }
        Ok(())
    }

    fn count(&mut self) -> Result<(), Exceeded> {
        self.values += 1;
        if self.values > self.max_values {
            return Err(Exceeded::Values(self.max_values));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(text: &str, max: usize) -> Result<(), Exceeded> {
        Shape::new(max).feed(text.as_bytes())
    }

    #[test]
    fn values_are_counted_outside_strings_only() {
        assert_eq!(check(r#"{"a":"[,,,{{:::]","b":[1,2]}"#, 6), Ok(()));
        assert_eq!(
            check(r#"{"a":"[,,,{{:::]","b":[1,2]}"#, 5),
            Err(Exceeded::Values(5))
        );
        // Escaped quotes stay inside the string.
        assert_eq!(check(r#"["\",,,,\\",1]"#, 2), Ok(()));
        let tiny = format!("[{}0]", "0,".repeat(1000));
        assert_eq!(check(&tiny, 1001), Ok(()));
        assert_eq!(check(&tiny, 1000), Err(Exceeded::Values(1000)));
    }

    #[test]
    fn depth_is_bounded() {
        let deep = "[".repeat(MAX_DEPTH + 1);
        assert_eq!(check(&deep, usize::MAX), Err(Exceeded::Depth));
        let ok = format!("{}{}", "[".repeat(MAX_DEPTH), "]".repeat(MAX_DEPTH));
        assert_eq!(check(&ok, usize::MAX), Ok(()));
    }

    #[test]
    fn chunks_split_anywhere_count_the_same() {
        let text = r#"{"k\"ey":["a\\",{"x":[1,2,"\u0022,"]}],"z":"}"}"#;
        let whole = {
            let mut s = Shape::new(usize::MAX);
            s.feed(text.as_bytes()).unwrap();
            (s.values, s.depth)
        };
        for cut in 0..text.len() {
            let mut s = Shape::new(usize::MAX);
            s.feed(&text.as_bytes()[..cut]).unwrap();
            s.feed(&text.as_bytes()[cut..]).unwrap();
            assert_eq!((s.values, s.depth), whole, "cut at {cut}");
        }
        assert_eq!(whole.1, 0);
    }
}
