//! The relay: session state, one pump per direction, interception, child lifecycle.
