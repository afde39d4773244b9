//! Fuzz target for `rootfence wrap`'s host-config editing (`rootfence::wrap`): any text is
//! parsed as JSONC and wrapped; wrap and unwrap never panic, wrap's output is accepted
//! again and wrapping it again changes nothing, and when the input held no wrapped entry,
//! unwrap gives back the input byte for byte.

#![no_main]

use libfuzzer_sys::fuzz_target;
use rootfence::wrap::{self, UnwrapOptions, WrapOptions};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let opts = WrapOptions {
        rootfence: "/usr/local/bin/rootfence".into(),
        policies: vec!["/etc/rootfence/org.toml".into()],
        ..WrapOptions::default()
    };
    let _ = wrap::unwrap_config(text, &UnwrapOptions::default());
    let Ok(w) = wrap::wrap_config(text, &opts) else {
        return;
    };
    let again = wrap::wrap_config(&w.text, &opts).expect("wrap's output parses");
    assert!(!again.changed, "wrap is not idempotent");
    let u = wrap::unwrap_config(&w.text, &UnwrapOptions::default()).expect("unwrap parses");
    if !text.contains("rootfence") {
        assert_eq!(u.text, text, "unwrap did not restore the input");
    }
    let _ = w.diff(text, "f");
});
