//! W3C Trace Context (`traceparent`, version 00) as MCP carries it in a request's
//! `params._meta` (SEP-414): read the host's, write rootfence's own in its place.
//!
//! Only version `00` is understood; the spec's rule for a version this parser does not know
//! (read the first four fields if the rest is well formed) is kept for higher versions.
//! Anything malformed is not a parent: rootfence then starts a trace of its own and leaves
//! the host's field as it was.

use opentelemetry::trace::{SpanContext, SpanId, TraceFlags, TraceId, TraceState};

/// A parsed `traceparent` (with its `tracestate`): the host's span, as a remote parent.
pub(crate) fn parse(traceparent: &str, tracestate: Option<&str>) -> Option<SpanContext> {
    let tp = traceparent.trim();
    let mut parts = tp.split('-');
    let version = parts.next()?;
    let trace_id = parts.next()?;
    let span_id = parts.next()?;
    let flags = parts.next()?;
    let rest = parts.next();
    if version.len() != 2 || !is_lower_hex(version) || version == "ff" {
        return None;
    }
    // Version 00 has exactly four fields; a later version may add fields after them.
    if (version == "00" && rest.is_some()) || tp.len() < 55 {
        return None;
    }
    if trace_id.len() != 32 || span_id.len() != 16 || flags.len() != 2 {
        return None;
    }
    if !(is_lower_hex(trace_id) && is_lower_hex(span_id) && is_lower_hex(flags)) {
        return None;
    }
    let trace_id = TraceId::from_hex(trace_id).ok()?;
    let span_id = SpanId::from_hex(span_id).ok()?;
    let flags = u8::from_str_radix(flags, 16).ok()?;
    if trace_id == TraceId::INVALID || span_id == SpanId::INVALID {
        return None;
    }
    let state = tracestate
        .and_then(|s| s.parse::<TraceState>().ok())
        .unwrap_or_default();
    Some(SpanContext::new(
        trace_id,
        span_id,
        // Only the sampled bit is defined; others are not carried over.
        TraceFlags::new(flags & 0x01),
        true,
        state,
    ))
}

/// The `traceparent` naming `span_id` as the parent, in the trace (and with the sampling
/// flag) of `parent`.
pub(crate) fn format(parent: &SpanContext, span_id: SpanId) -> String {
    format!(
        "00-{}-{}-{:02x}",
        parent.trace_id(),
        span_id,
        parent.trace_flags().to_u8()
    )
}

fn is_lower_hex(s: &str) -> bool {
    s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

#[cfg(test)]
mod tests {
    use super::*;

    const TP: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    #[test]
    fn a_valid_traceparent_is_a_remote_sampled_parent() {
        let sc = parse(TP, Some("rojo=00f067aa0ba902b7,congo=t61rcWkgMzE")).unwrap();
        assert_eq!(
            sc.trace_id(),
            TraceId::from_hex("4bf92f3577b34da6a3ce929d0e0e4736").unwrap()
        );
        assert_eq!(sc.span_id(), SpanId::from_hex("00f067aa0ba902b7").unwrap());
        assert!(sc.is_sampled());
        assert!(sc.is_remote());
        assert_eq!(sc.trace_state().get("rojo"), Some("00f067aa0ba902b7"));
    }

    #[test]
    fn rootfence_writes_its_own_span_in_the_hosts_trace() {
        let sc = parse(TP, None).unwrap();
        let ours = SpanId::from_hex("1111111111111111").unwrap();
        assert_eq!(
            format(&sc, ours),
            "00-4bf92f3577b34da6a3ce929d0e0e4736-1111111111111111-01"
        );
        let unsampled = parse(&TP.replace("-01", "-00"), None).unwrap();
        assert!(format(&unsampled, ours).ends_with("-00"));
    }

    #[test]
    fn malformed_traceparents_are_no_parent() {
        for bad in [
            "",
            "00",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
            "00-4bf92f3577b34da6a3ce929d0e0e473-600f067aa0ba902b7-01",
            "0x-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        ] {
            assert!(parse(bad, None).is_none(), "{bad:?}");
        }
        // A later version with more fields is read by its first four.
        assert!(parse(&format!("01{}-more", &TP[2..]), None).is_some());
    }
}
